// The trends page's scaling models and histories, and the job page's comparison with the
// previous run of the same program at the same size (site/web/views.cpp gives the JSON). Job
// strings go into the page as text nodes only.
import { api, chart, el, fmt, shortLabel, shortText, showError, when } from "./app.js";

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
      scales: { x: { type: "logarithmic", title: { display: true, text: "ranks" } }, y: { title: { display: true, text: "wall time per rank (s)" } } },
      plugins: { title: { display: true, text: shortLabel("Scaling: " + programName(program)) } },
    },
  });
}

async function historyChart(holder, user, program) {
  const h = await api(`/api/user/history?user=${encodeURIComponent(user)}&program=${program.program_id}`);
  const id = `history-${program.program_id}`;
  holder.append(el("div", { class: "chart" }, el("canvas", { id })));
  const datasets = h.sizes.map((s) => ({
    label: `${s.ranks} ranks`,
    data: s.runs.filter((r) => r.complete).map((r) => ({ x: r.end, y: r.wall_s })),
  }));
  const flagged = [];
  for (const s of h.sizes) for (const r of s.runs) if (r.flagged) flagged.push({ x: r.end, y: r.wall_s });
  datasets.push({ label: "flagged regressions", data: flagged, showLine: false, pointStyle: "crossRot", pointRadius: 9, borderWidth: 3, borderColor: "#c00" });
  chart(id, {
    type: "line",
    data: { datasets },
    options: {
      scales: { x: { type: "linear", ticks: { callback: (v) => when(v).slice(0, 10) } }, y: { title: { display: true, text: "wall time per rank (s)" } } },
      plugins: { title: { display: true, text: shortLabel("History at each size: " + programName(program)) } },
    },
  });
}

export async function trendsPart(app, user) {
  const holder = el("section", { id: "trends" }, el("h2", {}, "Scaling and history of your programs"));
  app.append(holder);
  try {
    const r = await api("/api/user/models?user=" + encodeURIComponent(user));
    const modelled = r.programs.filter((p) => p.modelled).sort((a, b) => b.runs - a.runs).slice(0, MAX_PROGRAMS);
    for (const p of modelled) {
      const wall = r.models.find((m) => m.program_id === p.program_id && m.routine === "wall");
      const lines = r.models.filter((m) => m.program_id === p.program_id);
      const list = el("ul", { class: "models" });
      for (const m of lines) list.append(el("li", {}, shortText(m.routine, 60), `: ${m.formula} s per rank`));
      const at = p.predictions.map((x) => `at ${x.ranks} ranks: wall ${fmt(x.wall, 3)} s per rank` + (x.dominant ? `, ${x.dominant} dominates` : ""));
      holder.append(el("h3", { class: "program" }, shortText(programName(p), 120)),
        el("p", {}, `${p.ranks.length} sizes (${p.ranks.join(", ")} ranks), ${p.runs} runs` + (p.left_out ? `; ${p.left_out} partial or unfinished left out` : "")),
        list, el("p", { class: "prediction" }, at.join("; ")));
      scalingChart(holder, p, wall);
      await historyChart(holder, user, p);
    }
    const others = r.programs.filter((p) => !p.modelled);
    if (others.length) {
      const list = el("ul", { id: "not-modelled" });
      for (const p of others) list.append(el("li", {}, shortText(programName(p), 120), `: ${p.missing}`));
      holder.append(el("h3", {}, "Not modelled"), list);
    }
    if (!r.programs.length) holder.append(el("p", {}, "No programs yet."));
  } catch (e) {
    showError(holder, e);
  }
}

export function comparePart(main, r) {
  if (r.regression) {
    const g = r.regression;
    const moved = g.moved.map((m) => `${m.routine} +${fmt(m.value_s - m.baseline_s, 3)} s`).join(", ");
    main.querySelector("h1").after(el("p", { id: "regression", class: "error" },
      `Regression: ${g.metric} ${fmt(g.value_s, 3)} s per rank against ${fmt(g.baseline_s, 3)} s over ${g.history_runs} earlier runs at this size` + (moved ? `; moved most: ${moved}` : "")));
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
    const change = x.previous_time_s > 0 ? `${fmt(100 * (x.time_s / x.previous_time_s - 1))} %` : "new";
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
    options: { plugins: { title: { display: true, text: "Routine by routine against the previous run" } } },
  });
}
