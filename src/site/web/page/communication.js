// The job page's communication parts, from the store through /api/job/ID: who talks to whom (the
// heaviest pairs of ranks), a heat map of every pair the store holds that zooms into rank ranges
// (a large job's ranks are summed into at most heatCells bins a side, re-binned for the ranks
// shown), and the collectives by communicator with each member of the small ones as bars.
import { count, el, fmt, shortText } from "./widgets.js";
import { csvLink, table } from "./lists.js";

const svgNs = "http://www.w3.org/2000/svg";
const heatCells = 64; // bins a side at most
const heatSide = 512; // pixels of the plot
const barsShown = 5; // communicators whose members are drawn before the reader asks for more

function svg(tag, attrs = {}, ...children) {
  const e = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// As the report's heat map (src/profiler/record/render_communication.cpp): "rank 3", "ranks 0-7".
const rankRange = ([first, last]) => (first === last ? `rank ${first}` : `ranks ${first}-${last}`);
const shortRange = ([first, last]) => (first === last ? String(first) : `${first}-${last}`);

// Light to dark blue on a log scale of the bytes (a few heavy pairs leave the rest visible), as
// the report's.
function heatColour(bytes, most) {
  const t = most <= 1 ? 1 : Math.min(1, Math.max(0, Math.log1p(bytes) / Math.log1p(most)));
  const mix = (light, dark) => Math.round(light + (dark - light) * t).toString(16).padStart(2, "0");
  return `#${mix(0xde, 0x08)}${mix(0xeb, 0x30)}${mix(0xf7, 0x6b)}`;
}

// The bins of one axis over the ranks first..last: as many ranks in each (the last may hold
// fewer), at most heatCells of them.
function axisBins(first, last) {
  const group = Math.ceil((last - first + 1) / heatCells);
  const bins = Math.ceil((last - first + 1) / group);
  return {
    first, last, group, bins,
    range: (k) => [first + k * group, Math.min(last, first + (k + 1) * group - 1)],
    of: (rank) => Math.floor((rank - first) / group),
  };
}

// The view in the page's address (?senders=0-63&receivers=0-63), so that a link restores it.
function viewOfAddress(ranks) {
  const params = new URLSearchParams(location.search);
  const range = (text) => {
    const m = /^(\d+)-(\d+)$/.exec(text || "");
    return m && Number(m[1]) <= Number(m[2]) && Number(m[2]) < ranks ? [Number(m[1]), Number(m[2])] : null;
  };
  const rows = range(params.get("senders")), cols = range(params.get("receivers"));
  return rows && cols ? { rows, cols } : null;
}

function keepViewInAddress(view, whole) {
  const params = new URLSearchParams(location.search);
  params.delete("senders");
  params.delete("receivers");
  if (!whole) {
    params.set("senders", `${view.rows[0]}-${view.rows[1]}`);
    params.set("receivers", `${view.cols[0]}-${view.cols[1]}`);
  }
  const query = params.toString();
  history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
}

// The kinds a view shows: "" every kind, "two-sided" the two-sided ones together (what the job's
// report sums as its pairs), else one kind's index.
const twoSided = "two-sided";
function kindShown(matrix, kind) {
  if (kind === "") return () => true;
  if (kind === twoSided) return (k) => !matrix.one_sided[k];
  return (k) => String(k) === kind;
}
const kindTitle = (matrix, kind) => (kind === twoSided ? "two-sided kinds" : matrix.kinds[Number(kind)].replaceAll("_", " "));

// The heat map of the pairs (rows: senders, columns: receivers): the page's only one (the job's
// report, which it carries, leaves its own out). Zoom: drag over cells (or click a cell of
// several ranks), the mouse wheel over the map, or the ranks typed in the form; each view bins
// the pairs again.
function heatMap(matrix, ranks, unlisted) {
  const whole = { rows: [0, ranks - 1], cols: [0, ranks - 1] };
  let view = viewOfAddress(ranks) || whole;
  let kind = "";
  const figure = el("figure", { id: "partners-heat-map", class: "zoomable-heatmap" });
  const input = (name, title) => el("input", { type: "number", min: 0, max: ranks - 1, name, title, size: 6 });
  const fields = { rowsFirst: input("rows_first", "first sending rank shown"), rowsLast: input("rows_last", "last sending rank shown"),
    colsFirst: input("cols_first", "first receiving rank shown"), colsLast: input("cols_last", "last receiving rank shown") };
  const form = el("form", { id: "heat-map-view" },
    el("label", {}, "Senders: ranks ", fields.rowsFirst, " to ", fields.rowsLast),
    el("label", {}, "receivers: ranks ", fields.colsFirst, " to ", fields.colsLast),
    el("button", { type: "submit" }, "Show"), " ",
    el("button", { type: "button", name: "out" }, "Zoom out"), " ",
    el("button", { type: "button", name: "whole" }, "Whole job"));
  if (matrix.kinds.length > 1) {
    // The two-sided kinds together when there are several besides one-sided ones.
    const oneSided = matrix.one_sided.filter(Boolean).length;
    const together = oneSided > 0 && matrix.kinds.length - oneSided > 1
      ? [el("option", { value: twoSided, title: "messages, not one-sided operations" }, "every two-sided kind")] : [];
    const select = el("select", { name: "kind" }, el("option", { value: "" }, "every kind"), ...together,
      ...matrix.kinds.map((k, i) => el("option", { value: String(i) }, k.replaceAll("_", " "))));
    select.addEventListener("change", () => { kind = select.value; draw(); });
    form.append(" ", el("label", {}, "Kind ", select));
  }
  const holder = el("div", { class: "heat-map-plot" });
  const caption = el("figcaption", { id: "heat-map-caption" });
  figure.append(form, holder, caption);

  const clamp = (rank) => Math.min(ranks - 1, Math.max(0, rank));
  const show = (next) => {
    const range = ([a, b]) => { const lo = clamp(Math.min(a, b)), hi = clamp(Math.max(a, b)); return [lo, hi]; };
    view = { rows: range(next.rows), cols: range(next.cols) };
    keepViewInAddress(view, view.rows[0] === 0 && view.rows[1] === ranks - 1 && view.cols[0] === 0 && view.cols[1] === ranks - 1);
    draw();
  };
  // The range of `span` ranks around `centre` that stays inside the job.
  const around = (centre, span) => {
    span = Math.min(ranks, Math.max(1, Math.round(span)));
    const first = Math.min(ranks - span, Math.max(0, Math.round(centre - span / 2)));
    return [first, first + span - 1];
  };
  const scaled = (factor, rowCentre, colCentre) => ({
    rows: around(rowCentre, (view.rows[1] - view.rows[0] + 1) * factor),
    cols: around(colCentre, (view.cols[1] - view.cols[0] + 1) * factor),
  });
  const middle = ([a, b]) => (a + b + 1) / 2;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const n = (f, fallback) => (f.value === "" ? fallback : Number(f.value));
    show({ rows: [n(fields.rowsFirst, 0), n(fields.rowsLast, ranks - 1)], cols: [n(fields.colsFirst, 0), n(fields.colsLast, ranks - 1)] });
  });
  form.querySelector("button[name=out]").addEventListener("click", () => show(scaled(2, middle(view.rows), middle(view.cols))));
  form.querySelector("button[name=whole]").addEventListener("click", () => show(whole));

  function draw() {
    const rows = axisBins(view.rows[0], view.rows[1]), cols = axisBins(view.cols[0], view.cols[1]);
    fields.rowsFirst.value = view.rows[0];
    fields.rowsLast.value = view.rows[1];
    fields.colsFirst.value = view.cols[0];
    fields.colsLast.value = view.cols[1];
    const cells = new Map();
    const shown = kindShown(matrix, kind);
    for (let i = 0; i < matrix.from.length; ++i) {
      const from = matrix.from[i], to = matrix.to[i];
      if (from < view.rows[0] || from > view.rows[1] || to < view.cols[0] || to > view.cols[1]) continue;
      if (!shown(matrix.kind[i])) continue;
      const key = rows.of(from) * cols.bins + cols.of(to);
      const c = cells.get(key) || { row: rows.of(from), col: cols.of(to), bytes: 0, messages: 0, pairs: new Set() };
      c.bytes += matrix.bytes[i];
      c.messages += matrix.messages[i];
      c.pairs.add(from * ranks + to);
      cells.set(key, c);
    }
    let most = 0;
    for (const c of cells.values()) most = Math.max(most, c.bytes);
    const margin = 64, w = heatSide / cols.bins, h = heatSide / rows.bins;
    const map = svg("svg", { class: "zoomable-heatmap", width: heatSide + margin + 8, height: heatSide + margin + 8,
      viewBox: `0 0 ${heatSide + margin + 8} ${heatSide + margin + 8}`, role: "img",
      "aria-label": "Bytes sent from each rank (rows) to each rank (columns)" });
    map.append(svg("rect", { x: margin, y: margin, width: heatSide, height: heatSide, fill: "#fff", stroke: "#999" }));
    const grouped = rows.group > 1 || cols.group > 1;
    for (const c of cells.values()) {
      const from = rows.range(c.row), to = cols.range(c.col);
      const pairs = grouped ? ` (${count(c.pairs.size, "pair")})` : "";
      map.append(svg("rect", { class: "pair", x: margin + c.col * w, y: margin + c.row * h, width: w, height: h,
        fill: heatColour(c.bytes, most), "data-from": shortRange(from), "data-to": shortRange(to) },
      svg("title", {}, `${rankRange(from)} to ${rankRange(to)}: ${c.bytes} bytes in ${c.messages} messages${pairs}`)));
    }
    // Each labelled bin's ranks on both axes, about 16 labels a side, the last bin's (the view's
    // last rank) always.
    const labels = (axis, across) => {
      const step = Math.ceil(axis.bins / 16);
      const labelled = [];
      for (let k = 0; k < axis.bins; k += step) labelled.push(k);
      const last = axis.bins - 1;
      if (labelled[labelled.length - 1] !== last) {
        if (last - labelled[labelled.length - 1] < step / 2) labelled.pop(); // too close to read
        labelled.push(last);
      }
      for (const k of labelled) {
        const text = shortRange(axis.range(k));
        const at = margin + (k + 0.5) * (across ? w : h);
        map.append(across
          ? svg("text", { class: "col-label", x: at, y: margin - 4, "font-size": 10, transform: `rotate(-60 ${at} ${margin - 4})` }, text)
          : svg("text", { class: "row-label", x: margin - 4, y: at + 3, "font-size": 10, "text-anchor": "end" }, text));
      }
    };
    labels(cols, true);
    labels(rows, false);
    map.append(svg("text", { x: margin + heatSide / 2, y: 10, "font-size": 11, "text-anchor": "middle" }, "to rank"),
      svg("text", { x: 10, y: margin + heatSide / 2, "font-size": 11, "text-anchor": "middle", transform: `rotate(-90 10 ${margin + heatSide / 2})` }, "from rank"));
    const selection = svg("rect", { class: "selection", fill: "none", stroke: "#d55e00", "stroke-width": 2, visibility: "hidden" });
    map.append(selection);
    holder.replaceChildren(map);
    const scope = (axis) => (axis.group === 1 ? "one rank a cell" : `${axis.group} ranks a cell, ${axis.bins} cells`);
    caption.textContent = `Bytes sent from ${rankRange(view.rows)} (rows, ${scope(rows)}) to ${rankRange(view.cols)} (columns, ${scope(cols)})` +
      (kind === "" ? "" : `, ${kindTitle(matrix, kind)} only`) +
      `; darker for more on a log scale up to ${most} bytes in this view; ${count(cells.size, "cell")} drawn. ` +
      "Hover a cell for its figures. Drag over cells, click a cell of several ranks, or turn the mouse wheel over the map to zoom; the form sets the ranks." +
      (unlisted ? " Pairs the record does not list are not drawn." : "");

    // Where the pointer is, in bins of the view (clamped to the plot).
    const binAt = (event) => {
      const box = map.getBoundingClientRect();
      const x = ((event.clientX - box.left) * (heatSide + margin + 8)) / box.width - margin;
      const y = ((event.clientY - box.top) * (heatSide + margin + 8)) / box.height - margin;
      return { row: Math.min(rows.bins - 1, Math.max(0, Math.floor(y / h))), col: Math.min(cols.bins - 1, Math.max(0, Math.floor(x / w))),
        inside: x >= 0 && y >= 0 && x < heatSide && y < heatSide };
    };
    let start = null;
    const mark = (a, b) => {
      const r0 = Math.min(a.row, b.row), r1 = Math.max(a.row, b.row), c0 = Math.min(a.col, b.col), c1 = Math.max(a.col, b.col);
      Object.entries({ x: margin + c0 * w, y: margin + r0 * h, width: (c1 - c0 + 1) * w, height: (r1 - r0 + 1) * h, visibility: "visible" })
        .forEach(([k, v]) => selection.setAttribute(k, v));
      return { rows: [rows.range(r0)[0], rows.range(r1)[1]], cols: [cols.range(c0)[0], cols.range(c1)[1]] };
    };
    map.addEventListener("mousedown", (event) => {
      const at = binAt(event);
      if (!at.inside) return;
      event.preventDefault();
      start = at;
      mark(start, start);
    });
    map.addEventListener("mousemove", (event) => { if (start) mark(start, binAt(event)); });
    map.addEventListener("mouseleave", () => { start = null; selection.setAttribute("visibility", "hidden"); });
    map.addEventListener("mouseup", (event) => {
      if (!start) return;
      const next = mark(start, binAt(event));
      start = null;
      if (next.rows[0] === view.rows[0] && next.rows[1] === view.rows[1] && next.cols[0] === view.cols[0] && next.cols[1] === view.cols[1]) return;
      if (next.rows[0] === next.rows[1] && next.cols[0] === next.cols[1] && !grouped) return; // one pair: nothing to zoom into
      show(next);
    });
    map.addEventListener("wheel", (event) => {
      const at = binAt(event);
      if (!at.inside) return;
      event.preventDefault();
      show(scaled(event.deltaY < 0 ? 0.5 : 2, middle(rows.range(at.row)), middle(cols.range(at.col))));
    }, { passive: false });
  }
  draw();
  return figure;
}

// Who talks to whom (the store's pairs of the job): the heaviest pairs of ranks by bytes, each
// kind of message (and of one-sided operation) apart, then the heat map of every pair.
export function partnersPart(main, r) {
  const p = r.partners;
  if (!p) return;
  const section = el("section", { id: "partners" }, el("h2", {}, "Who talks to whom"));
  const kinds = (x) => Object.entries(x.bytes_by_kind).map(([k, b]) => `${k.replaceAll("_", " ")} ${x.messages_by_kind[k]} (${b} B)`).join(", ");
  section.append(el("p", {}, `Point-to-point messages, and one-sided operations from origin to target (put, get, accumulate), between ${count(p.pair_count, "pair")} of ranks (world ranks), the heaviest first.`));
  const t = table("partners-pairs", ["from", "to", "messages or operations", "bytes", "by kind: messages or operations (bytes)"],
    p.pairs.map((x) => [x.from, x.to, x.messages, x.bytes, kinds(x)]));
  section.append(t, csvLink(t, "partners"));
  const ranks = r.job.ranks;
  const drawn = p.matrix && p.matrix.from.length && ranks > 0;
  section.append(el("p", { id: "partners-whole" }, p.unlisted
    ? `The record left out ${count(p.unlisted.pairs, "lighter pair")} (${p.unlisted.messages} messages, ${p.unlisted.bytes} bytes): the heat map shows the pairs it listed.`
    : "The record lists every pair: the heat map has the whole matrix.",
    ...(drawn ? [" ", el("a", { href: "#partners-heat-map" }, "To the heat map.")] : [])));
  if (drawn) section.append(el("h3", {}, "Heat map"), heatMap(p.matrix, ranks, !!p.unlisted));
  main.querySelector("#job-facts").after(section);
}

// The collectives by communicator (the store's rows of the job): members, calls, bytes and how
// evenly the members sent them; then each member of the communicators small enough for the
// record to list them, as bars.
export function collectivesPart(main, r) {
  const c = r.collectives;
  if (!c) return;
  const section = el("section", { id: "collectives" }, el("h2", {}, "Collectives by communicator"));
  section.append(el("p", {}, `Collective calls and the bytes each member sent in them (a root's broadcast, each member's reduction or gather, world ranks), on ${count(c.communicators.length, "communicator")}, the heaviest first. max / mean is the member that sent most over the mean (1.00: balanced).`));
  const calls = (x) => (x.calls_min === x.calls_max ? String(x.calls_max) : `${x.calls_min}-${x.calls_max}`);
  const size = (x) => (x.members_reported === x.size ? String(x.size) : `${x.size} (${x.members_reported} reported)`);
  const t = table("collectives-table", ["members", "size", "calls per member", "calls", "bytes", "bytes per member min / mean / max", "max at rank", "max / mean"],
    c.communicators.map((x) => [shortText(x.members, 60), size(x), calls(x), x.calls, x.bytes,
      `${x.bytes_per_member.min} / ${fmt(x.bytes_per_member.mean)} / ${x.bytes_per_member.max}`, x.bytes_per_member.max_rank,
      x.imbalance === null ? "-" : fmt(x.imbalance, 2)]));
  section.append(t, csvLink(t, "collectives"));
  const elsewhere = [];
  if (c.unlisted) elsewhere.push(`communicators the record left out: ${c.unlisted.calls} calls, ${c.unlisted.bytes} bytes`);
  if (c.unattributed) elsewhere.push(`on intercommunicators or communicators not known: ${c.unattributed.calls} calls, ${c.unattributed.bytes} bytes`);
  if (elsewhere.length) section.append(el("p", { id: "collectives-elsewhere" }, "Not in the table: " + elsewhere.join("; ") + "."));
  // Each member's bytes as a bar (its share of the most any member sent), with its calls: the
  // heaviest few communicators at once (a record lists up to 48, each table costs the page's
  // layout), the others on request.
  const small = c.communicators.map((x, n) => [x, n]).filter(([x]) => x.per_member.length);
  const memberBars = ([x, n]) => {
    const most = Math.max(1, ...x.per_member.map((m) => m.bytes));
    const bars = el("table", { id: `collective-members-${n}`, class: "member-bars", "data-members": x.members },
      el("caption", {}, `Members of ${x.members} (${count(x.size, "member")})`),
      el("thead", {}, el("tr", {}, ...["rank", "calls", "bytes", ""].map((h) => el("th", {}, h)))));
    const body = el("tbody");
    for (const m of x.per_member) {
      const width = (100 * m.bytes) / most;
      const bar = el("span", { class: "bar", title: `rank ${m.rank}: ${m.bytes} bytes in ${m.calls} calls`, style: `width:${width.toFixed(1)}%` });
      body.append(el("tr", {}, el("td", { class: "n" }, m.rank), el("td", { class: "n" }, m.calls), el("td", { class: "n" }, m.bytes),
        el("td", { class: "bar" }, bar)));
    }
    bars.append(body);
    return bars;
  };
  section.append(...small.slice(0, barsShown).map(memberBars));
  if (small.length > barsShown) {
    const more = el("button", { type: "button", id: "collective-members-more" }, `Members of ${count(small.length - barsShown, "more communicator")}`);
    more.addEventListener("click", () => more.replaceWith(...small.slice(barsShown).map(memberBars)));
    section.append(el("p", {}, more));
  }
  (main.querySelector("#partners") || main.querySelector("#job-facts")).after(section);
}
