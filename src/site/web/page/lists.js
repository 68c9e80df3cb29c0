// The list pages beside the jobs list: jobs, users and programs ranked by wasted MPI time; the
// flagged jobs and regressions; two runs of a program side by side. Each list has a period
// picker (?days=N, as on every list page) and a CSV download of its table.
import { api, coreHours, count, el, fmt, shortText, showError, when } from "./widgets.js";

// Core-hours from core-seconds: enough digits that a short run is not 0.00.

// The period picker of every list page: the last N days (?days=N), "any time" where a list
// has no default period. Changing it reloads the page with the other parameters kept.
export function periodSelect(days, anyTime = false) {
  const select = el("select", { name: "days" });
  const choices = [[1, "today"], [7, "last 7 days"], [28, "last 28 days"], [90, "last 90 days"], [365, "last 365 days"]];
  if (days && !choices.some(([n]) => n === days)) choices.push([days, `last ${days} days`]);
  choices.sort((a, b) => a[0] - b[0]);
  if (anyTime) choices.push(["", "any time"]);
  for (const [n, label] of choices) {
    const o = el("option", { value: n }, label);
    if (String(n) === String(days || "")) o.selected = true;
    select.append(o);
  }
  return select;
}

export function periodForm(days) {
  const select = periodSelect(days);
  const form = el("form", { method: "get", action: location.pathname, id: "period" }, el("label", {}, "Period ", select), " ", el("button", { type: "submit" }, "Show"));
  for (const [k, v] of new URLSearchParams(location.search))
    if (k !== "days" && k !== "page") form.append(el("input", { type: "hidden", name: k, value: v }));
  select.addEventListener("change", () => form.submit());
  return form;
}

// A cell's whole text: a shortened string's title holds all of it.
const cellText = (cell) => { const s = cell.querySelector("span.short"); return s ? s.title : cell.textContent; };
const csvField = (t) => (/[",\n\r]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t);

// The table as CSV (RFC 4180), every string whole.
export function tableCsv(table) {
  return [...table.querySelectorAll("tr")].map((tr) => [...tr.cells].map((c) => csvField(cellText(c))).join(",")).join("\r\n") + "\r\n";
}

// A "CSV" link after the table that downloads it as `name`.csv.
export function csvLink(table, name) {
  const a = el("a", { href: "#", class: "csv", download: `${name}.csv`, "data-for": table.id }, "CSV");
  a.addEventListener("click", () => { a.href = URL.createObjectURL(new Blob([tableCsv(table)], { type: "text/csv" })); });
  return el("p", {}, a);
}

// A table with a head row and rows of cells (strings, numbers or elements).
export function table(id, head, rows) {
  const t = el("table", { id }, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))));
  const body = el("tbody");
  for (const row of rows) body.append(el("tr", {}, ...row.map((c) => el("td", {}, c))));
  t.append(body);
  return t;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  return q.toString();
}

const percent = (part, whole) => (whole > 0 ? fmt((100 * part) / whole, 0) : "0");

export async function wastePage(app) {
  const params = new URLSearchParams(location.search);
  const user = params.get("user") || "";
  try {
    const r = await api("/api/waste?" + query({ days: params.get("days"), user }));
    const me = await api("/api/me");
    document.querySelector("main h1").after(periodForm(r.days));
    app.append(el("p", { id: "waste-note" },
      `Wasted time: over the machine model where the overhead module measured it, else ranks waiting in routines every rank called beyond the least busy rank's time. ` +
      `Among the ${count(r.looked_at, "job")} with the most MPI core-hours of the last ${count(r.days, "day")}${user ? ` of ${user}` : ""}` +
      (r.complete ? " (no other job can waste more than those listed)." : " (the first read: a job beyond them may waste more).")));
    const programLink = (p) => el("a", { href: "/jobs?" + query({ user: p.owner, q: p.executable, days: r.days, sort: "mpi_hours" }) }, shortText(p.program || "(unknown)"));
    app.append(el("h2", {}, "Jobs by wasted core-hours"));
    const jobs = table("waste-jobs", ["Job", "User", "Executable", "Ranks", "MPI core-h", "Wasted core-h", "% of MPI", "Why"],
      r.jobs.map((j) => [el("a", { href: `/job/${j.id}` }, shortText(j.record_id, 40)), shortText(j.owner, 24), shortText(j.executable), j.ranks,
        coreHours(j.mpi_time_s), coreHours(j.wasted_s), percent(j.wasted_s, j.mpi_time_s), j.why]));
    app.append(jobs, csvLink(jobs, "jobs-by-waste"));
    if (me.admin && !user) {
      app.append(el("h2", {}, "Users by wasted core-hours"));
      const users = table("waste-users", ["User", "Jobs", "MPI core-h", "Wasted core-h", "% of MPI"],
        r.users.map((u) => [el("a", { href: "/waste?" + query({ user: u.owner, days: r.days }) }, shortText(u.owner, 40)), u.jobs,
          coreHours(u.mpi_time_s), coreHours(u.wasted_s), percent(u.wasted_s, u.mpi_time_s)]));
      app.append(users, csvLink(users, "users-by-waste"));
    }
    app.append(el("h2", {}, "Programs by wasted core-hours"));
    const programs = table("waste-programs", ["Program", "User", "Jobs", "MPI core-h", "Wasted core-h", "% of MPI", "History"],
      r.programs.map((p) => [programLink(p), shortText(p.owner, 24), p.jobs, coreHours(p.mpi_time_s), coreHours(p.wasted_s), percent(p.wasted_s, p.mpi_time_s),
        p.program_id ? el("a", { href: `/user?${query({ user: p.owner, program: p.program_id })}#program-${p.program_id}` }, "trends") : ""]));
    app.append(programs, csvLink(programs, "programs-by-waste"));
  } catch (e) {
    showError(app, e);
  }
}

export async function flaggedPage(app, jobsTable) {
  const params = new URLSearchParams(location.search);
  const user = params.get("user") || "";
  try {
    const me = await api("/api/me");
    const r = await api("/api/regressions?" + query({ days: params.get("days"), user }));
    document.querySelector("main h1").after(periodForm(r.days));
    const who = user || (me.admin ? "the site" : me.user);
    app.append(el("h2", {}, `Regressions of ${who} (${count(r.count, "job")}): slower than the program's earlier runs at the same size, beyond their noise`));
    const more = (g) => (g.baseline_s > 0 ? `${g.metric} +${fmt(100 * (g.value_s / g.baseline_s - 1), 0)} %` : g.metric);
    const moved = (g) => g.moved.map((m) => `${m.routine} +${fmt(m.value_s - m.baseline_s, 3)} s`).join(", ");
    const regressions = table("regressions", ["Job", "End (UTC)", "User", "Program", "Ranks", "Slower", "Time/rank s", "Usual s", "Moved most (per rank)"],
      r.regressions.map((g) => [el("a", { href: `/job/${g.job_id}` }, shortText(g.record_id, 40)), g.end, shortText(g.owner, 24),
        shortText(g.executable + (g.arguments ? " " + g.arguments : "")), g.ranks, more(g), fmt(g.value_s, 3), fmt(g.baseline_s, 3), moved(g)]));
    app.append(regressions, csvLink(regressions, "regressions"));
    const critical = await api("/api/jobs?" + query({ min_mpi: r.critical_mpi_percent, sort: "mpi_hours", days: r.days, user: r.user, per_page: 100 }));
    app.append(el("h2", {}, `Critical jobs of ${who} (${count(critical.total, "job")}${critical.total_is_lower_bound ? " at least" : ""}): MPI over ${r.critical_mpi_percent} % of CPU time, most MPI core-hours first`));
    const jobs = jobsTable(critical.jobs, me.admin, "critical-jobs");
    app.append(jobs, csvLink(jobs, "critical-jobs"));
  } catch (e) {
    showError(app, e);
  }
}

// Two runs side by side: their facts and each routine's time per rank, changes of more than
// 10 % highlighted.
export async function comparePage(app) {
  const params = new URLSearchParams(location.search);
  try {
    const [a, b] = await Promise.all([api(`/api/job/${encodeURIComponent(params.get("a") || "")}`), api(`/api/job/${encodeURIComponent(params.get("b") || "")}`)]);
    const change = (x, y) => (x > 0 ? (100 * (y - x)) / x : y > 0 ? Infinity : 0);
    const changeCell = (x, y) => {
      const c = change(x, y);
      const text = c === Infinity ? "new" : `${c >= 0 ? "+" : ""}${fmt(c, 1)} %`;
      return el("span", { class: Math.abs(c) > 10 ? (c > 0 ? "worse" : "better") : "" }, text);
    };
    const link = (j) => el("a", { href: `/job/${j.job.id}` }, shortText(j.job.record_id, 40));
    const perRank = (j, s) => s / Math.max(1, j.job.ranks);
    const facts = [
      ["Job", link(a), link(b), ""],
      ["End (UTC)", when(a.job.end), when(b.job.end), ""],
      ["Ranks", a.job.ranks, b.job.ranks, changeCell(a.job.ranks, b.job.ranks)],
      ["Wall s", fmt(a.job.wall_time_s, 3), fmt(b.job.wall_time_s, 3), changeCell(a.job.wall_time_s, b.job.wall_time_s)],
      ["MPI s per rank", fmt(perRank(a, a.job.mpi_time_s), 3), fmt(perRank(b, b.job.mpi_time_s), 3), changeCell(perRank(a, a.job.mpi_time_s), perRank(b, b.job.mpi_time_s))],
      ["MPI %", fmt(a.job.mpi_percent), fmt(b.job.mpi_percent), changeCell(a.job.mpi_percent, b.job.mpi_percent)],
      ["Ended", a.job.status, b.job.status, a.job.status === b.job.status ? "" : el("span", { class: "worse" }, "differs")],
    ];
    const times = new Map();
    for (const [k, j] of [[0, a], [1, b]])
      for (const x of j.routines) {
        if (x.outside_wall_time) continue;
        const t = times.get(x.name) || [0, 0];
        t[k] = perRank(j, x.time_s);
        times.set(x.name, t);
      }
    const routines = [...times.entries()].sort((x, y) => Math.max(...y[1]) - Math.max(...x[1]))
      .map(([name, [x, y]]) => [name, fmt(x, 4), fmt(y, 4), changeCell(x, y)]);
    const t = table("compare-runs", ["", "Run A", "Run B", "B against A"], [...facts, ...routines.map((r) => [r[0] + " s per rank", ...r.slice(1)])]);
    app.append(t, csvLink(t, "two-runs"));
  } catch (e) {
    showError(app, e);
  }
}

// On a job's page: choose any other run of its program to compare with.
export async function compareChooser(main, r) {
  if (!r.program_id) return;
  // The newest 50 runs of each size, this job's size first.
  const h = await api(`/api/user/history?${query({ program: r.program_id, user: r.job.owner, newest: 50 })}`);
  h.sizes.sort((a, b) => (b.ranks === r.job.ranks) - (a.ranks === r.job.ranks));
  const select = el("select", { name: "b" });
  for (const size of h.sizes)
    for (const run of [...size.runs].reverse())
      if (run.job_id !== r.job.id) select.append(el("option", { value: run.job_id }, `${size.ranks} ranks, ended ${when(run.end)}${run.flagged ? " (flagged)" : ""}`));
  if (!select.options.length) return;
  const form = el("form", { method: "get", action: "/compare", id: "compare-with" },
    el("input", { type: "hidden", name: "a", value: r.job.id }), el("label", {}, "Compare with another run of this program ", select), " ", el("button", { type: "submit" }, "Compare"));
  main.querySelector("#job-facts").append(form);
}
