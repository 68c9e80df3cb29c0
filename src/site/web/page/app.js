// The pages of `strata site serve`: fetch the JSON API and draw tables (as DOM text, never as
// HTML strings: job strings stay inert) and charts (Chart.js). Every chart is kept in
// window.strataCharts so that the browser tests can ask what it draws.
import { api, axis, chart, copyLinkButton, coreHours, count, drawWaiting, el, fmt, shortLabel, shortText, showError, when } from "./widgets.js";
import { comparePart, fetchTrends, trendsPart } from "./trends.js";
import { compareChooser, comparePage, csvLink, flaggedPage, periodForm, periodSelect, table, wastePage } from "./lists.js";
import { collectivesPart, partnersPart } from "./communication.js";

// The report's cells too long to read in a row (a 20,000-character argument): their start, and a
// button that shows the whole text, wrapped.
function collapseLongCells(root, max = 300) {
  for (const td of root.querySelectorAll("td")) {
    const full = td.textContent;
    if (full.length <= max) continue;
    const text = el("span", { class: "cut" }, full.slice(0, max) + "\u2026");
    const button = el("button", { type: "button", class: "expand" }, `show all ${full.length.toLocaleString("en")} characters`);
    button.addEventListener("click", () => {
      const open = button.dataset.open === "1";
      text.textContent = open ? full.slice(0, max) + "\u2026" : full;
      button.textContent = open ? `show all ${full.length.toLocaleString("en")} characters` : "show less";
      button.dataset.open = open ? "" : "1";
    });
    td.replaceChildren(text, " ", button);
  }
}


// Rank 0's exit code after MPI_Finalize; when the store has none, an empty cell whose title says why
// (never 0: a job not seen exiting is not called clean).
function exitCell(j) {
  if (j.exit_code !== null && j.exit_code !== undefined)
    return el("td", { class: j.exit_code ? "n error" : "n" }, String(j.exit_code));
  return el("td", {
    class: "n unknown",
    title: j.status === "finalized"
      ? "exit code not known: the process did not exit through exit() after MPI_Finalize, or its record had left the spool by then, or was rebuilt by strata recover, or was stored before exit codes were kept"
      : "no exit code after MPI_Finalize: the job ended otherwise (see Ended)",
  });
}

export function jobsTable(jobs, showOwner, id = "jobs") {
  const head = ["Job", "End (UTC)", showOwner ? "User" : null, "Executable", "Language", "Ranks",
    "Wall s", "CPU h", "MPI %", "MPI core-h", "Ended", "Exit", "Regression"].filter((h) => h !== null);
  const table = el("table", { id }, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))));
  const body = el("tbody");
  for (const j of jobs) {
    const link = el("a", { href: `/job/${j.id}` }, shortText(j.record_id, 40));
    const cells = [link, when(j.end), showOwner ? shortText(j.owner, 24) : null, shortText(j.executable), shortText(j.language, 24),
      j.ranks, fmt(j.wall_time_s), fmt(j.cpu_time_s / 3600, 2), fmt(j.mpi_percent),
      coreHours(j.mpi_time_s), j.status, exitCell(j), j.flagged ? el("a", { href: `/job/${j.id}`, class: "error" }, "flagged") : ""];
    const tr = el("tr", { "data-owner": j.owner });
    for (const c of cells) if (c !== null) tr.append(c instanceof HTMLTableCellElement ? c : el("td", {}, c));
    body.append(tr);
  }
  table.append(body);
  return table;
}

async function jobsPage(app) {
  const me = await api("/api/me");
  const params = new URLSearchParams(location.search);
  const form = el("form", { method: "get", action: "/jobs", id: "filter" });
  const field = (label, name, attrs = {}) =>
    el("label", {}, label + " ", el("input", Object.assign({ name, value: params.get(name) || "" }, attrs)));
  const days = params.get("days") ? Number(params.get("days")) : "";
  form.append(field("Search", "q", { size: 20, title: "part of the executable's path, or the start of the record id" }), el("label", {}, "Period ", periodSelect(days, true)));
  if (me.admin) form.append(field("User", "user", { size: 10 }));
  const lang = el("select", { name: "language" });
  for (const l of ["", "C/C++", "Fortran"]) {
    const o = el("option", { value: l }, l || "any language");
    if (params.get("language") === l) o.selected = true;
    lang.append(o);
  }
  form.append(el("label", {}, lang), field("Ranks from", "min_ranks", { size: 5 }),
    field("to", "max_ranks", { size: 5 }), field("MPI % over", "min_mpi", { size: 4 }),
    field("Account", "account", { size: 10, title: "Slurm account, exactly" }),
    field("Partition", "partition", { size: 10, title: "Slurm partition, exactly" }));
  const exit = el("select", { name: "exit" });
  for (const [v, t] of [["", "any exit"], ["nonzero", "exit code not 0"]]) {
    const o = el("option", { value: v }, t);
    if ((params.get("exit") || "") === v) o.selected = true;
    exit.append(o);
  }
  form.append(el("label", {}, exit));
  const sort = el("select", { name: "sort" });
  for (const [v, t] of [["end", "newest"], ["end_asc", "oldest"], ["mpi_hours", "MPI core-hours"], ["mpi", "MPI %"], ["cpu", "CPU time"], ["ranks", "ranks"], ["exit", "exit code"]]) {
    const o = el("option", { value: v }, t);
    if ((params.get("sort") || "end") === v) o.selected = true;
    sort.append(o);
  }
  form.append(el("label", {}, "Sort ", sort), el("button", { type: "submit" }, "Show"));
  app.append(form, el("p", {}, copyLinkButton()));
  const query = new URLSearchParams();
  for (const [k, v] of params) if (v !== "") query.set(k, v);
  try {
    const r = await api("/api/jobs?" + query.toString());
    const total = el("p", { id: "total" }, `at least ${count(r.total, "job")}`);
    const pager = el("p", { id: "pager" });
    const jobs = jobsTable(r.jobs, me.admin);
    app.append(total, jobs, csvLink(jobs, "jobs"), pager);
    // A large list is counted to its end only now, the rows already shown.
    if (r.total_is_lower_bound) r.total = (await api("/api/jobs/count?" + query.toString())).total;
    const pages = Math.max(1, Math.ceil(r.total / r.per_page));
    const number = (n) => n.toLocaleString("en");
    total.textContent = r.page <= pages
      ? `${count(r.total, "job")}, page ${number(r.page)} of ${number(pages)}`
      : `${count(r.total, "job")}: page ${number(r.page)} is past the last page, ${number(pages)}`;
    const link = (label, p) => {
      const q = new URLSearchParams(query);
      q.set("page", p);
      return el("a", { href: "/jobs?" + q.toString(), "data-page": p }, label);
    };
    const links = [];
    if (r.page > 1) links.push(link("first", 1), link("previous", Math.min(r.page - 1, pages)));
    if (r.page < pages) links.push(link("next", r.page + 1), link(`last (${number(pages)})`, pages));
    for (const a of links) pager.append(a, " ");
  } catch (e) {
    showError(app, e);
  }
}


// How a job ended, in words. The exit code after MPI_Finalize is rank 0's, when its process
// exited while the record was still in the spool.
function endedText(e) {
  const known = (x) => x !== null && x !== undefined;
  switch (e.status) {
    case "finalized": return known(e.exit_code)
      ? `MPI_Finalize reached on every rank, then exit code ${e.exit_code} (rank 0's process).`
      : "MPI_Finalize reached on every rank (the exit code afterwards is not known: the process did not exit through exit(), or the record was ingested before it did).";
    case "aborted": return `aborted by MPI_Abort` + (e.abort_code !== null && e.abort_code !== undefined ? ` with code ${e.abort_code}.` : ".");
    case "signal": return `ended by signal ${e.signal}.`;
    case "exit": return "a rank exited without calling MPI_Finalize (its exit code is not recorded).";
    case "killed": return "a rank was killed with no handler run (SIGKILL); the record was rebuilt by strata recover.";
    default: return String(e.status) + ".";
  }
}

// Whose job it is (the owner of its record's file) against whom the record names, and how it ended.
function jobFacts(main, r) {
  const j = r.job;
  const facts = el("section", { id: "job-facts" },
    el("p", { id: "job-owner" }, `Owner: ${j.owner} (uid ${j.owner_uid}), who wrote its record.`));
  if (j.owner_mismatch)
    facts.append(el("p", { id: "owner-mismatch", class: "error" },
      `The record claims another user: ${j.claimed_user || "(none)"} (uid ${j.claimed_uid}). The report below shows the claim; the owner above is what the file system says.`));
  const clean = r.ended.status === "finalized" && !r.ended.exit_code;
  facts.append(el("p", { id: "job-ended", class: clean ? "" : "error" }, "Ended: " + endedText(r.ended)));
  if (r.hang)
    facts.append(el("section", { id: "job-hang" }, el("h2", {}, "Why the job hung"), el("pre", {}, r.hang.text)));
  main.querySelector("h1").after(facts);
}

// Why the job spends its time in MPI (the server's findings from the record), each with what
// to try next and the tool that shows more.
function whyPart(main, r) {
  if (!(r.why || []).length) return;
  const list = el("ol", { id: "why" });
  for (const f of r.why)
    list.append(el("li", { "data-kind": f.kind }, f.text, " ", el("em", {}, "Try: "), f.next, " ",
      el("span", { class: "tool", "data-tool": f.tool }, `More with the ${f.tool} module: `, el("code", {}, f.how), ".")));
  main.querySelector("#job-facts").after(el("section", { id: "why-section" }, el("h2", {}, "Why this job spends time in MPI"), list));
}

async function jobPage() {
  const id = document.body.dataset.job;
  const main = document.querySelector("main");
  const report = main.querySelector(".report");
  if (report) collapseLongCells(report);
  main.querySelector("h1").after(el("p", { id: "job-share" }, copyLinkButton()));
  try {
    const r = await api(`/api/job/${id}`);
    jobFacts(main, r);
    partnersPart(main, r);
    collectivesPart(main, r);
    whyPart(main, r);
    const measured = r.routines.filter((x) => x.per_rank_time_s && x.per_rank_time_s.max !== undefined);
    // MPI_Init and MPI_Finalize bracket the wall time: shown apart, not as bars against it.
    const routines = measured.filter((x) => !x.outside_wall_time).sort((a, b) => b.per_rank_time_s.max - a.per_rank_time_s.max);
    const outside = measured.filter((x) => x.outside_wall_time);
    if (outside.length)
      document.getElementById("imbalance").parentNode.after(el("p", { id: "outside-wall" },
        "Outside the measured wall time (before MPI_Init returned, and in MPI_Finalize), slowest rank: " +
        outside.map((x) => `${x.name} ${fmt(x.per_rank_time_s.max, 3)} s`).join(", ") + "."));
    chart("imbalance", {
      type: "bar",
      data: {
        labels: routines.map((x) => shortLabel(x.name, 40)),
        datasets: [
          { label: "min over ranks (s)", data: routines.map((x) => x.per_rank_time_s.min) },
          { label: "mean (s)", data: routines.map((x) => x.per_rank_time_s.mean) },
          { label: "max (s)", data: routines.map((x) => x.per_rank_time_s.max) },
        ],
      },
      options: {
        scales: { y: axis("time per rank (s)"), x: axis("routine, the slowest rank's time first") },
        plugins: { title: { display: true, text: "Time in each routine across ranks" } },
      },
    });
    const sizes = new Map();
    for (const x of r.routines)
      for (const [size, count] of x.size_histogram || []) sizes.set(size, (sizes.get(size) || 0) + count);
    const keys = [...sizes.keys()].sort((a, b) => a - b);
    if (!keys.length)
      document.getElementById("sizes").parentNode.replaceWith(el("p", { id: "sizes-note" },
        "This job recorded no message sizes (no point-to-point or collective call that carries data)."));
    else
      chart("sizes", {
        type: "bar",
        data: { labels: keys.map((k) => `${k} B`), datasets: [{ label: "messages", data: keys.map((k) => sizes.get(k)) }] },
        options: {
          scales: { y: axis("messages"), x: axis("message size (bytes, from)") },
          plugins: { title: { display: true, text: "Message sizes (all routines)" } },
        },
      });
    comparePart(main, r);
    await compareChooser(main, r);
  } catch (e) {
    showError(main, e);
  }
}

async function userPage(app) {
  const user = document.body.dataset.user;
  // Both answers asked for at once: the trends do not wait for the weeks' charts.
  const trends = fetchTrends(user);
  trends.catch(() => {}); // its failure is shown by trendsPart
  try {
    const r = await api("/api/user/weeks?weeks=26&user=" + encodeURIComponent(user));
    const labels = r.weeks.map((w) => when(w.week_start).slice(0, 10));
    chart("weeks-jobs", {
      type: "bar",
      data: {
        labels,
        datasets: [
          { label: "jobs", data: r.weeks.map((w) => w.jobs), yAxisID: "y" },
          { label: "CPU hours", data: r.weeks.map((w) => w.cpu_time_s / 3600), yAxisID: "y1", type: "line" },
        ],
      },
      options: {
        scales: { y: axis("jobs"), y1: axis("CPU hours", { position: "right" }), x: axis("week from (UTC)") },
        plugins: { title: { display: true, text: "Jobs and CPU time per week" } },
      },
    });
    chart("weeks-mpi", {
      type: "line",
      data: { labels, datasets: [{ label: "MPI % of CPU time", data: r.weeks.map((w) => w.mpi_percent) }] },
      options: { scales: { y: axis("MPI % of CPU time"), x: axis("week from (UTC)") }, plugins: { title: { display: true, text: "MPI share per week" } } },
    });
    if (r.weeks.length === 0) app.append(el("p", {}, "No jobs in the last 26 weeks."));
    await trendsPart(app, user, trends);
  } catch (e) {
    showError(app, e);
  }
}

async function sitePage(app) {
  const asked = new URLSearchParams(location.search).get("days");
  try {
    const r = await api("/api/site" + (asked ? "?days=" + encodeURIComponent(asked) : ""));
    document.querySelector("main h1").after(periodForm(r.days));
    const t = r.totals || { jobs: 0, cpu_time_s: 0, mpi_percent: 0 };
    document.querySelector("main h1").after(el("p", { id: "site-totals" },
      `Last ${count(r.days, "whole day")} (UTC, ${when(r.from).slice(0, 10)} to ${when(r.to - 1).slice(0, 10)}): ${count(t.jobs, "job")} of ${count(r.users || 0, "user")}, ${fmt(t.cpu_time_s / 3600, 0)} CPU hours, MPI ${fmt(t.mpi_percent)} %.`));
    const share = (id, title, lines, onClick) => chart(id, {
      type: "bar",
      data: {
        labels: lines.map((l) => l.label),
        datasets: [
          { label: "% of CPU time", data: lines.map((l) => l.cpu_percent) },
          { label: "% of jobs", data: lines.map((l) => l.jobs_percent) },
          { label: "MPI %", data: lines.map((l) => l.mpi_percent) },
        ],
      },
      options: { scales: { y: axis("%") }, plugins: { title: { display: true, text: title } }, onClick },
    });
    share("by-size", "By job size in ranks (Fig. 8)", r.by_size || []);
    share("by-cpu-class", "By CPU time class, log10 s (Figs. 6, 7)", r.by_cpu_class || []);
    // Drill-down: a user's bar, or their line in the table below, leads to their programs and
    // jobs ranked by waste, and from a program to its jobs.
    const users = (r.by_user || []).slice(0, 30);
    const wasteOf = (user) => `/waste?user=${encodeURIComponent(user)}&days=${r.days}`;
    share("by-user", "By user (Fig. 9): choose a user for their programs and jobs", users, (event, bars) => {
      if (bars.length) location.href = wasteOf(users[bars[0].index].label);
    });
    const langs = r.languages || [];
    chart("languages", {
      type: "bar",
      data: {
        labels: langs.map((l) => l.language),
        datasets: [
          { label: "% of CPU time", data: langs.map((l) => l.cpu_percent) },
          { label: "% of jobs", data: langs.map((l) => l.jobs_percent) },
        ],
      },
      options: { scales: { y: axis("%") }, plugins: { title: { display: true, text: "By language binding (Fig. 5)" } } },
    });
    const routines = (r.routines || []).slice(0, 20);
    chart("routines", {
      type: "bar",
      data: { labels: routines.map((x) => x.routine), datasets: [{ label: "% of MPI time", data: routines.map((x) => x.share_of_mpi_percent) }] },
      options: { indexAxis: "y", scales: { x: axis("% of MPI time") }, plugins: { title: { display: true, text: "MPI routines by time (Fig. 10)" } } },
    });
    const groups = r.groups || [];
    chart("groups", {
      type: "bar",
      data: {
        labels: groups.map((g) => g.group),
        datasets: [
          { label: "% of jobs", data: groups.map((g) => g.jobs_percent) },
          { label: "% of CPU time", data: groups.map((g) => g.cpu_weighted_percent) },
        ],
      },
      options: { scales: { y: axis("%") }, plugins: { title: { display: true, text: "Routine groups used (Fig. 11)" } } },
    });
    if (users.length) {
      app.append(el("h2", {}, "Users by CPU time"));
      const t = table("site-users", ["User", "Jobs", "% of CPU time", "MPI %"], users.map((u) =>
        [el("a", { href: wasteOf(u.label) }, shortText(u.label, 40)), u.jobs, fmt(u.cpu_percent), fmt(u.mpi_percent)]));
      app.append(t, csvLink(t, "users"));
    }
    // Slurm's accounts and partitions, where the records carry them; each leads to its jobs.
    for (const [key, noun, name] of [["by_account", "account", "accounts"], ["by_partition", "partition", "partitions"]]) {
      const groups = r[key] || [];
      if (!groups.some((g) => g.label)) continue;
      app.append(el("h2", {}, `By Slurm ${noun}`));
      const jobsOf = (label) => `/jobs?${noun}=${encodeURIComponent(label)}&days=${r.days}`;
      const t = table(`site-${name}`, [`Slurm ${noun}`, "Jobs", "% of CPU time", "CPU hours", "MPI %"], groups.map((g) =>
        [g.label ? el("a", { href: jobsOf(g.label) }, shortText(g.label, 40)) : "(none: not started by Slurm)", g.jobs, fmt(g.cpu_percent), fmt(g.cpu_time_s / 3600, 1), fmt(g.mpi_percent)]));
      app.append(t, csvLink(t, name));
    }
    if ((r.critical_job_rows || []).length) {
      app.append(el("h2", {}, `Critical jobs (${count(r.critical_job_count, "job")}), most MPI core-hours first`));
      const critical = jobsTable(r.critical_job_rows, true);
      app.append(critical, csvLink(critical, "critical-jobs"));
    }
  } catch (e) {
    showError(app, e);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const app = document.getElementById("app");
  const pages = { jobs: jobsPage, job: jobPage, user: userPage, site: sitePage, waste: wastePage,
    flagged: (a) => flaggedPage(a, jobsTable), compare: comparePage };
  const run = pages[document.body.dataset.page];
  // data-ready: the page's data is shown (the first screen's charts drawn); data-drawn: every
  // chart is drawn. Each moment is marked for the benchmark (bench/web_pages_chromium.js).
  if (run)
    run(app).finally(() => {
      performance.mark("strata-data-ready");
      document.body.dataset.ready = "1";
      drawWaiting().finally(() => {
        performance.mark("strata-drawn");
        document.body.dataset.drawn = "1";
      });
    });
});
