// The trends page's scaling models and histories, and the job page's comparison with the
// previous run of the same program at the same size (site/web/views.cpp gives the JSON). Job
// strings go into the page as text nodes only.
import { api, axis, chart, el, fmt, shortLabel, shortText, showError, when } from "./widgets.js";

const MAX_PROGRAMS = 8; // charts per page: the programs with the most runs

function programName(p) {
  return p.executable + (p.arguments ? " " + p.arguments : "");
}

// The model's curve from the smallest size to the farthest prediction, at powers of two and
// the sizes between.
function curve(model, ranks) {
  const points = [];
  const last = ranks[ranks.length - 1] * 4;
  for (let p = ranks[0]; p <= last; p *= Math.SQRT2)
    points.push({ x: p, y: model.c0 + model.c1 * Math.pow(p, model.i) * Math.pow(Math.log2(p), model.j) });
  return points;
}

function scalingChart(holder, program, wall) {
  const id = `scaling-${program.program_id}`;
  holder.append(el("div", { class: "chart" }, el("canvas", { id })));
  const medians = wall.medians;
  chart(id, {
    type: "line",
    data: {
      datasets: [
        { label: "fastest run", data: medians.map((m) => ({ x: m.ranks, y: m.low })), pointRadius: 0, borderWidth: 0 },
        { label: "spread (fastest to slowest run)", data: medians.map((m) => ({ x: m.ranks, y: m.high })), pointRadius: 0, borderWidth: 0, fill: "-1", backgroundColor: "rgba(70,130,180,0.2)" },
        { label: "median per size", data: medians.map((m) => ({ x: m.ranks, y: m.median })), showLine: false, pointRadius: 4 },
        { label: `model: ${wall.formula}`, data: curve(wall, program.ranks), pointRadius: 0, borderDash: [4, 3] },
        { label: "prediction", data: wall.predictions.map((p) => ({ x: p.ranks, y: p.seconds })), showLine: false, pointStyle: "triangle", pointRadius: 6 },
      ],
    },
    options: {
      scales: { x: axis("ranks", { type: "logarithmic" }), y: axis("wall time per rank (s)") },
      plugins: { title: { display: true, text: shortLabel("Scaling: " + programName(program)) } },
    },
  });
}

// The newest runs of each size a history chart draws (a program of tens of thousands of runs
// sent megabytes, for points closer than a pixel).
const historyRuns = 500;

// The trends page's data, one request: the user's programs and models, and the histories of
// the programs it draws (the one chosen with ?program=, else the first MAX_PROGRAMS modelled
// ones, flagged regressions first, then most runs).
export function fetchTrends(user) {
  const chosen = Number(new URLSearchParams(location.search).get("program")) || null;
  const q = new URLSearchParams({ user, charts: MAX_PROGRAMS, newest: historyRuns });
  if (chosen) q.set("program", chosen);
  return api("/api/user/trends?" + q.toString());
}

function historyChart(holder, program, h) {
  const cut = h.sizes.some((s) => s.all_runs > s.shown);
  const id = `history-${program.program_id}`;
  holder.append(el("div", { class: "chart" }, el("canvas", { id })));
  // Points as Chart.js keeps them (no parsing), in time order (normalized): thousands of runs.
  const datasets = h.sizes.map((s) => ({
    label: `${s.ranks} ranks`,
    data: s.end.map((x, k) => ({ x, y: s.wall_s[k] })),
    parsing: false,
    normalized: true,
  }));
  const flagged = h.sizes.flatMap((s) => s.flagged.map((r) => ({ x: r.end, y: r.wall_s })));
  datasets.push({ label: "flagged regressions", data: flagged, showLine: false, pointStyle: "crossRot", pointRadius: 9, borderWidth: 3, borderColor: "#000", backgroundColor: "#000" });
  chart(id, {
    type: "line",
    data: { datasets },
    options: {
      scales: { x: axis("end of the run (UTC)", { type: "linear", ticks: { callback: (v) => when(v).slice(0, 10) } }), y: axis("wall time per rank (s)") },
      plugins: { title: { display: true, text: shortLabel((cut ? `History at each size, newest ${historyRuns} runs: ` : "History at each size: ") + programName(program)) } },
    },
  });
}

// Every program of the user in a table (the chosen one's charts below it); without a choice,
// the charts of the programs with flagged regressions and then of those with the most runs.
function programTable(programs, user, chosen) {
  const table = el("table", { id: "programs" }, el("thead", {}, el("tr", {},
    ...["Program", "Runs", "Sizes (ranks)", "Flagged regressions", "Model"].map((h) => el("th", {}, h)))));
  const body = el("tbody");
  for (const p of programs) {
    const q = new URLSearchParams({ program: p.program_id });
    if (user !== document.body.dataset.self) q.set("user", user);
    const link = el("a", { href: "/user?" + q.toString() + "#program-" + p.program_id }, shortText(programName(p), 100));
    const tr = el("tr", { "data-program": p.program_id, class: p.program_id === chosen ? "chosen" : "" },
      el("td", {}, link), el("td", { class: "n" }, p.runs), el("td", {}, p.ranks.join(", ")),
      el("td", { class: "n" }, p.flagged || 0), el("td", {}, p.modelled ? "yes" : p.missing));
    body.append(tr);
  }
  table.append(body);
  return table;
}

// `trends`: the promise of fetchTrends(user).
export async function trendsPart(app, user, trends) {
  const holder = el("section", { id: "trends" }, el("h2", {}, "Scaling and history of your programs"));
  app.append(holder);
  try {
    const r = await trends;
    const chosen = Number(new URLSearchParams(location.search).get("program")) || null;
    const programs = r.programs.slice().sort((a, b) => (b.flagged || 0) - (a.flagged || 0) || b.runs - a.runs);
    if (!programs.length) {
      holder.append(el("p", {}, "No programs yet."));
      return;
    }
    const modelled = programs.filter((p) => p.modelled);
    const drawn = r.histories.map((h) => programs.find((p) => p.program_id === h.program_id));
    const note = chosen
      ? (drawn.length ? `Charts of the program chosen below (${programs.length} in all).`
        : "The program chosen has no model yet (see why in the table).")
      : `${programs.length} programs; charts of ${drawn.length}` +
        (modelled.length > drawn.length ? ` of the ${modelled.length} modelled (flagged regressions first, then most runs): choose another in the table.` : ".");
    holder.append(el("p", { id: "programs-note" }, note), programTable(programs, user, chosen));
    for (const [k, p] of drawn.entries()) {
      const wall = r.models.find((m) => m.program_id === p.program_id && m.routine === "wall");
      const lines = r.models.filter((m) => m.program_id === p.program_id);
      const list = el("ul", { class: "models" });
      for (const m of lines) list.append(el("li", {}, shortText(m.routine, 60), `: ${m.formula} s per rank`));
      const at = p.predictions.map((x) => `at ${x.ranks} ranks: wall ${fmt(x.wall, 3)} s per rank` + (x.dominant ? `, ${x.dominant} dominates` : ""));
      holder.append(el("h3", { class: "program", id: `program-${p.program_id}` }, shortText(programName(p), 120)),
        el("p", {}, `${p.ranks.length} sizes (${p.ranks.join(", ")} ranks), ${p.runs} runs` + (p.left_out ? `; ${p.left_out} partial or unfinished left out` : "") +
          (p.flagged ? `; ${p.flagged} flagged as regressions` : "")),
        list, el("p", { class: "prediction" }, at.join("; ")));
      scalingChart(holder, p, wall);
      historyChart(holder, p, r.histories[k]);
    }
  } catch (e) {
    showError(holder, e);
  }
}

export function comparePart(main, r) {
  if (r.regression) {
    const g = r.regression;
    const moved = g.moved.map((m) => `${m.routine} +${fmt(m.value_s - m.baseline_s, 3)} s`).join(", ");
    const banner = el("p", { id: "regression", class: "error" },
      `Regression: ${g.metric} ${fmt(g.value_s, 3)} s per rank against ${fmt(g.baseline_s, 3)} s over ${g.history_runs} earlier runs at this size` + (moved ? `; moved most: ${moved}` : "") + ". ");
    if (r.program_id) {
      const q = new URLSearchParams({ program: r.program_id });
      if (r.job.owner !== document.body.dataset.self) q.set("user", r.job.owner);
      banner.append(el("a", { id: "program-history", href: "/user?" + q.toString() + "#program-" + r.program_id }, "The program's history"));
    }
    main.querySelector("h1").after(banner);
  }
  const p = r.previous;
  const holder = el("section", { id: "compare" });
  main.querySelector("h2").before(holder);
  if (!p) {
    holder.append(el("p", { id: "no-previous" }, "No earlier complete run of this program at this size."));
    return;
  }
  holder.append(el("h2", {}, "Compared with the previous run at this size"),
    el("p", {}, "Previous: ", el("a", { href: `/job/${p.job.id}` }, shortText(p.job.record_id, 40)), ` ended ${when(p.job.end)}: wall ${fmt(p.wall_s, 3)} s, MPI ${fmt(p.mpi_s, 3)} s per rank; this job: wall ${fmt(p.this_wall_s, 3)} s, MPI ${fmt(p.this_mpi_s, 3)} s.`),
    el("div", { class: "chart" }, el("canvas", { id: "compare-chart" })));
  const table = el("table", { id: "compare-table" }, el("tr", {}, ...["routine", "this job (s per rank)", "previous", "change"].map((h) => el("th", {}, h))));
  for (const x of p.routines) {
    // "new" only for a routine that no earlier run at this size called.
    const change = x.previous_time_s > 0 ? `${fmt(100 * (x.time_s / x.previous_time_s - 1))} %`
      : x.in_previous ? "no time before" : x.in_earlier_runs ? "not in the previous run" : "new";
    table.append(el("tr", {}, el("td", {}, shortText(x.name, 60)), el("td", { class: "n" }, fmt(x.time_s, 4)), el("td", { class: "n" }, fmt(x.previous_time_s, 4)), el("td", { class: "n" }, change)));
  }
  holder.append(table);
  const top = p.routines.slice(0, 12);
  chart("compare-chart", {
    type: "bar",
    data: {
      labels: top.map((x) => shortLabel(x.name, 40)),
      datasets: [
        { label: "this job (s per rank)", data: top.map((x) => x.time_s) },
        { label: "previous run (s per rank)", data: top.map((x) => x.previous_time_s) },
      ],
    },
    options: { scales: { y: axis("time per rank (s)") }, plugins: { title: { display: true, text: "Routine by routine against the previous run" } } },
  });
}
