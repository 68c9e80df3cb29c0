// The job page of bench/run_web_communication.sh's one job in headless Chromium: per visit, the
// page's data shown (data-ready from the navigation's start), its API answer's size, and one
// zoom of the heat map (the form's ranks 0-20,000 a side) drawn again. Prints the medians.
// Usage: node web_communication_chromium.js BASE TOKEN VISITS
const { chromium } = require("playwright-core");

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

(async () => {
  const [base, token, visits] = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: process.env.STRATA_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(base + "/jobs");
    await page.fill("input[name=token]", token);
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    const id = await page.evaluate(async () => (await (await fetch("/api/jobs")).json()).jobs[0].id);
    const seen = [];
    for (let i = 0; i <= Number(visits); ++i) {
      await page.goto(`${base}/job/${id}`);
      await page.waitForSelector("body[data-drawn]");
      const visit = await page.evaluate(() => {
        const api = performance.getEntriesByType("resource").find((e) => e.name.includes("/api/job/"));
        const form = document.querySelector("#heat-map-view"); // absent before the heat map zoomed
        const t = performance.now();
        if (form) {
          for (const [name, value] of [["rows_first", 0], ["rows_last", 20000], ["cols_first", 0], ["cols_last", 20000]])
            form.querySelector(`[name=${name}]`).value = value;
          form.requestSubmit();
        }
        return { ready: performance.getEntriesByName("strata-data-ready")[0].startTime, zoom: form ? performance.now() - t : NaN,
          bytes: api.encodedBodySize, decoded: api.decodedBodySize, cells: document.querySelectorAll("#partners-heat-map rect.pair").length };
      });
      if (i > 0) seen.push(visit); // the first visit warms up
    }
    console.log(`job page data ready, median of ${seen.length}: ${median(seen.map((v) => v.ready)).toFixed(0)} ms ` +
      `(slowest ${Math.max(...seen.map((v) => v.ready)).toFixed(0)} ms); API answer ${seen[0].decoded} bytes ` +
      `(${seen[0].bytes} sent); zoom to ranks 0-20,000 drawn in ${median(seen.map((v) => v.zoom)).toFixed(0)} ms (${seen[0].cells} cells)`);
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(String((e && e.stack) || e));
  process.exit(1);
});
