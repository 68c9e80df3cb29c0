// Drives headless Chromium (Debian's, through playwright-core) for test_web_views.py. Input
// (argv[2]): JSON {base, token, admin_token, jobs: {record id: job id}}. Output (stdout): JSON of
// what the browser saw; the test makes the assertions.
const { chromium } = require("playwright-core");

async function login(browser, base, token, seen) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => seen.errors.push(String(e)));
  await page.goto(base + "/jobs");
  await page.fill("input[name=token]", token);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  return { context, page };
}

async function ready(page, url) {
  if (url) await page.goto(url);
  await page.waitForSelector("body[data-ready]", { timeout: 60000 });
}

// An element's text, or null when the page has none (before a feature, the test says what is
// missing rather than timing out).
const text = (page, selector) => page.$eval(selector, (e) => e.textContent).catch(() => null);
const attribute = (page, selector, name) => page.$eval(selector, (e, n) => e.getAttribute(n), name).catch(() => null);

// The programs whose charts the trends page drew, and its charts' canvas ids.
async function drawn(page) {
  return {
    drawn: await page.$$eval("#trends h3.program", (h) => h.map((x) => (x.querySelector("span.short") || x).title || x.textContent)),
    charts: await page.$$eval("#trends canvas", (c) => c.map((x) => x.id)),
  };
}

(async () => {
  const input = JSON.parse(process.argv[2]);
  const browser = await chromium.launch({
    executablePath: process.env.STRATA_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const seen = { errors: [] };
  try {
    const { page } = await login(browser, input.base, input.token, seen);

    // The trends page: every program in a table, the charts of some, any chosen.
    await ready(page, input.base + "/user");
    seen.trends = {
      rows: await page.$$eval("#programs tbody tr", (r) => r.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent))),
      note: await text(page, "#programs-note"),
      ...(await drawn(page)),
    };
    if (seen.trends.rows.length) {
      await Promise.all([page.waitForNavigation(), page.click("#programs tbody tr:last-child a")]);
      await ready(page);
      seen.trends.chosen = await drawn(page);
    }

    // The flagged job's page links to its program's history.
    await ready(page, `${input.base}/job/${input.jobs["rare:4:5"]}`);
    seen.flagged = {
      banner: await text(page, "#regression"),
      link: await attribute(page, "#program-history", "href"),
    };
    if (seen.flagged.link) {
      await Promise.all([page.waitForNavigation(), page.click("#program-history")]);
      await ready(page);
      seen.flagged.followed = await drawn(page);
    }
    process.stdout.write(JSON.stringify(seen));
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(String((e && e.stack) || e));
  process.exit(1);
});
