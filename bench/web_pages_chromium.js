// Each page of `strata site serve` in headless Chromium (Debian's, through playwright-core from
// src/site/web/page/node_modules), with the browser's own Accept-Encoding, as an admin: the time
// from the start of the navigation until the page has drawn its data (body[data-ready], which
// every page sets when its last API answer is shown), and until its last chart is drawn (charts
// below the first screen are drawn after the data), median and slowest of N visits after one
// warm-up. Usage (NODE_PATH=src/site/web/page/node_modules):
//   node bench/web_pages_chromium.js URL TOKEN [VISITS]
// Prints a Markdown table.
const { chromium } = require("playwright-core");

// The moments the page marked (performance.mark in src/site/web/page/app.js), ms from the
// start of the navigation: its data shown, and its last chart drawn.
async function timeOf(page, url) {
  await page.goto(url);
  await page.waitForSelector("body[data-drawn]", { timeout: 120000 });
  return page.evaluate(() => ["strata-data-ready", "strata-drawn"].map((m) => performance.getEntriesByName(m)[0].startTime));
}

(async () => {
  const [base, token, visits = "5"] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.STRATA_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(base + "/login");
    await page.fill("input[name=token]", token);
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    // The busiest user, a job of theirs with the most MPI core-hours and two runs of a program.
    const api = (path) => page.evaluate(async (p) => (await fetch(p)).json(), path);
    const busiest = (await api("/api/site")).by_user.sort((a, b) => b.jobs - a.jobs)[0].label;
    const job = (await api(`/api/jobs?user=${encodeURIComponent(busiest)}&sort=mpi_hours&per_page=1`)).jobs[0];
    const detail = await api(`/api/job/${job.id}`);
    const history = detail.program_id ? await api(`/api/user/history?program=${detail.program_id}&user=${encodeURIComponent(busiest)}`) : { sizes: [] };
    const runs = history.sizes.flatMap((s) => s.runs).map((r) => r.job_id).filter((id) => id !== job.id);
    const u = encodeURIComponent(busiest);
    const pages = [
      ["jobs list, newest first", "/jobs"],
      ["jobs list, by MPI core-hours", "/jobs?sort=mpi_hours"],
      ["jobs list, page 100", "/jobs?page=100"],
      ["jobs list, busiest user, last 28 days", `/jobs?user=${u}&days=28`],
      ["job page (report, charts, comparison)", `/job/${job.id}`],
      ["trends of the busiest user", `/user?user=${u}`],
      ["site page, 28 days", "/site"],
      ["site page, 365 days", "/site?days=365"],
      ["waste: the site's jobs, users, programs, 28 days", "/waste"],
      ["waste: the site, 365 days", "/waste?days=365"],
      ["waste: the busiest user, 28 days", `/waste?user=${u}`],
      ["flagged: the site's regressions and critical jobs", "/flagged"],
      ["flagged: the busiest user's", `/flagged?user=${u}`],
    ];
    if (runs.length) pages.push(["two runs compared", `/compare?a=${job.id}&b=${runs[0]}`]);
    console.log(`| page (${busiest}: the busiest user) | data ready, median ms | slowest | every chart drawn, median ms |\n|---|---:|---:|---:|`);
    const median = (v) => v.slice().sort((a, b) => a - b)[Math.floor(v.length / 2)];
    for (const [label, path] of pages) {
      await timeOf(page, base + path); // warm-up: caches, the site figures of a new period
      const times = [];
      for (let i = 0; i < Number(visits); ++i) times.push(await timeOf(page, base + path));
      const ready = times.map((t) => t[0]);
      console.log(`| ${label} | ${median(ready).toFixed(0)} | ${Math.max(...ready).toFixed(0)} | ${median(times.map((t) => t[1])).toFixed(0)} |`);
    }
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(String((e && e.stack) || e));
  process.exit(1);
});
