// The live view of `strata monitor serve`: polls /rounds for new JSON lines and redraws the
// chosen event's statistic over the rounds (uPlot) and its histogram over the rounds as a heat
// map (one column per round, one row per bin).
import uPlot from "uplot";

const rounds = [];
let chart = null;
const $ = (id) => document.getElementById(id);

// The events of a round, whatever the filter: classes are summed into one view per event
// (the first class's histogram is shown when the filter is `classes`).
function eventsOf(round) {
  if (round.events) return round.events;
  if (round.classes && round.classes.length) return round.classes[0].events;
  return {};
}

function eventNames() {
  const names = new Set();
  for (const r of rounds) for (const n of Object.keys(eventsOf(r))) names.add(n);
  return [...names].filter((n) => !n.startsWith("strata.")).sort();
}

function refreshEvents() {
  const select = $("event");
  const chosen = select.value;
  const names = eventNames();
  if (names.join() === [...select.options].map((o) => o.value).join()) return;
  select.innerHTML = "";
  for (const n of names) select.add(new Option(n, n));
  // A busy default: the event with most time in the latest round.
  if (names.includes(chosen)) select.value = chosen;
  else if (names.length) {
    const last = eventsOf(rounds[rounds.length - 1]);
    select.value = names.reduce((a, b) =>
      ((last[b] && last[b].time.sum) || 0) > ((last[a] && last[a].time.sum) || 0) ? b : a);
  }
}

function drawChart(event, stat) {
  const xs = [];
  const ys = [];
  rounds.forEach((r, i) => {
    const e = eventsOf(r)[event];
    xs.push(i);
    ys.push(e ? e.time[stat] : null);
  });
  const data = [xs, ys];
  const width = Math.min(900, document.body.clientWidth - 40);
  if (!chart || chart.seriesLabel !== `${event} ${stat}`) {
    if (chart) chart.destroy();
    chart = new uPlot({
      width, height: 260,
      scales: { x: { time: false } },
      axes: [{ label: "round" }, { label: "seconds" }],
      series: [{ label: "round" }, { label: `${event} time ${stat}`, stroke: "#2a6", width: 2 }],
    }, data, $("chart"));
    chart.seriesLabel = `${event} ${stat}`;
  } else {
    chart.setData(data);
  }
}

function drawHeat(event) {
  const canvas = $("heat");
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const columns = rounds.map((r) => (eventsOf(r)[event] || {}).hist).filter(Boolean);
  let cells = 0;
  if (columns.length) {
    const bins = Math.max(...columns.map((h) => h.bins.length));
    const w = canvas.width / columns.length;
    const h = canvas.height / bins;
    columns.forEach((hist, x) => {
      const total = hist.bins.reduce((a, b) => a + b, 0) || 1;
      hist.bins.forEach((count, b) => {
        const shade = Math.round(255 * (1 - count / total));
        ctx.fillStyle = `rgb(${shade},${shade},255)`;
        ctx.fillRect(x * w, canvas.height - (b + 1) * h, Math.ceil(w), Math.ceil(h));
        cells += 1;
      });
    });
  }
  canvas.dataset.cells = String(cells);
}

function redraw() {
  refreshEvents();
  const event = $("event").value;
  const stat = $("stat").value;
  const status = $("status");
  status.dataset.rounds = String(rounds.length);
  const last = rounds[rounds.length - 1];
  status.textContent = last
    ? `${rounds.length} rounds, last: ${last.round} (${last.ranks} ranks, ${last.filter}, ${last.root_bytes} bytes at the front end)`
    : "waiting for rounds…";
  if (!event) return;
  drawChart(event, stat);
  drawHeat(event);
}

async function poll() {
  try {
    const response = await fetch(`rounds?from=${rounds.length}`, { cache: "no-store" });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    const fresh = await response.json();
    if (fresh.length) {
      rounds.push(...fresh);
      redraw();
    }
    $("error").textContent = "";
  } catch (e) {
    $("error").textContent = `cannot read rounds: ${e.message}`;
  }
  setTimeout(poll, 1000);
}

$("event").addEventListener("change", redraw);
$("stat").addEventListener("change", redraw);
poll();
