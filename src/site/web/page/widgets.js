// What every page of `strata site serve` draws with: DOM elements (as text, never HTML strings),
// the JSON API, errors, charts (Chart.js, each kept in window.strataCharts for the browser
// tests; those below the first screen drawn after the page's data) and short forms of long
// text. app.js and trends.js both import it.
import { Chart, registerables } from "chart.js";

Chart.register(...registerables);
window.strataCharts = [];

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export async function api(path) {
  const res = await fetch(path, { credentials: "same-origin" });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

export function showError(where, err) {
  where.append(el("p", { class: "error" }, String(err.message || err)));
}

// Okabe and Ito's palette, told apart in the common forms of colour blindness; yellow last, as it
// is faint on white.
export const palette = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"];

// An axis titled with its unit.
export const axis = (text, extra = {}) => Object.assign({ title: { display: true, text } }, extra);

// Charts below the first screen wait until the page's data is shown (a long page is read and
// scrolled before its last chart is drawn; each chart costs tens of milliseconds): drawWaiting()
// then draws them one a task, top first.
const waiting = [];

export function chart(id, config) {
  const canvas = document.getElementById(id);
  if (!canvas) return null;
  if (canvas.getBoundingClientRect().top > window.innerHeight) {
    waiting.push([canvas, config]);
    return null;
  }
  return draw(canvas, config);
}

export async function drawWaiting() {
  while (waiting.length) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    const [canvas, config] = waiting.shift();
    draw(canvas, config);
  }
}

function draw(canvas, config) {
  config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false },
    config.options || {});
  // Each series its own colour; the value axes from zero, so that a change of 0.1 % looks as
  // small as it is.
  config.data.datasets.forEach((d, k) => {
    const colour = palette[k % palette.length];
    if (d.borderColor === undefined) d.borderColor = colour;
    if (d.backgroundColor === undefined) d.backgroundColor = colour;
  });
  const scales = (config.options.scales = config.options.scales || {});
  const value = config.options.indexAxis === "y" ? "x" : "y";
  for (const name of [value, "y1"]) {
    if (name === "y1" && !scales.y1) continue;
    if (scales[name] && scales[name].type === "logarithmic") continue;
    scales[name] = Object.assign({ beginAtZero: true }, scales[name] || {});
  }
  const c = new Chart(canvas, config);
  window.strataCharts.push(c);
  pngLink(c);
  return c;
}

// A "PNG" link under a chart that downloads it as an image, on white (the canvas itself is
// transparent), at the resolution it is shown.
function pngLink(c) {
  const a = el("a", { href: "#", class: "png", download: `${c.canvas.id}.png`, "data-for": c.canvas.id }, "PNG");
  a.addEventListener("click", () => {
    const image = document.createElement("canvas");
    image.width = c.canvas.width;
    image.height = c.canvas.height;
    const g = image.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, image.width, image.height);
    g.drawImage(c.canvas, 0, 0);
    a.href = image.toDataURL("image/png");
  });
  const holder = c.canvas.closest(".chart") || c.canvas;
  holder.after(el("p", { class: "png" }, a));
}

// A string from a job that may be thousands of characters long (paths, arguments): its start and
// end around an ellipsis, the whole of it in the title (shown on hover).
export function shortText(text, max = 80) {
  text = String(text);
  if (text.length <= max) return text;
  const head = Math.ceil(max * 0.6);
  return el("span", { title: text, class: "short" }, text.slice(0, head) + "\u2026" + text.slice(text.length - (max - head - 1)));
}

// The same for a chart's title or label, which has no title to hover.
export const shortLabel = (text, max = 100) =>
  (String(text).length <= max ? String(text) : String(text).slice(0, max - 1) + "\u2026");

// A button that copies the page's address, which holds its view (period, search, filters, sort),
// for sharing. The browser's clipboard exists in secure contexts only (HTTPS, or a server on
// 127.0.0.1); elsewhere, or when the browser refuses, the address is shown selected instead.
export function copyLinkButton() {
  const button = el("button", { type: "button", class: "copy-link", title: "copy the address of this view, to share it" }, "Copy link");
  const note = el("span", { class: "copy-note", role: "status" });
  button.addEventListener("click", async () => {
    const url = location.href.split("#")[0];
    try {
      if (!navigator.clipboard) throw new Error("this page is not served over HTTPS, so the browser gives it no clipboard");
      await navigator.clipboard.writeText(url);
      note.textContent = "Copied: " + url;
      note.dataset.copied = url;
    } catch (e) {
      const field = el("input", { value: url, readonly: "", size: Math.min(url.length, 80) });
      note.replaceChildren(`Not copied (${e.message}); the link: `, field);
      field.select();
    }
  });
  return el("span", { class: "share" }, button, " ", note);
}

// MPI core-hours (MPI time summed over ranks): enough digits that a short run is not 0.00.
export const coreHours = (s) => { const h = s / 3600; return h >= 10 ? fmt(h, 0) : h >= 0.01 ? fmt(h, 2) : h > 0 ? h.toPrecision(2) : "0"; };
// "1 job", "2,000 jobs".
export const count = (n, noun) => `${Number(n).toLocaleString("en")} ${noun}${n === 1 ? "" : "s"}`;
export const fmt = (x, digits = 1) => (typeof x === "number" ? x.toFixed(digits) : String(x));
export const when = (t) => new Date(t * 1000).toISOString().replace("T", " ").slice(0, 16);
