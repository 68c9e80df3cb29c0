// Drives headless Chromium (Debian's, through playwright-core) for test_web_pages.py. Input
// (argv[2]): JSON {base, token, admin_token, long_job}. Output (stdout): JSON of what the browser saw;
// the test makes the assertions.
const { chromium } = require("playwright-core");

async function login(browser, base, token) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(base + "/jobs");
  await page.fill("input[name=token]", token);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  return { context, page };
}

async function ready(page, url) {
  const r = await page.goto(url);
  await page.waitForSelector("body[data-ready]", { timeout: 30000 });
  return r.status();
}

// The Content-Encoding of what the browser fetches with its own Accept-Encoding.
async function encodings(page) {
  return page.evaluate(async () => {
    const of = async (path) => (await fetch(path, { cache: "no-store" })).headers.get("content-encoding");
    return { script: await of("/assets/strata-web.js"), jobs_api: await of("/api/jobs?per_page=500") };
  });
}

// How wide the page is against the window it is shown in.
async function width(page) {
  return page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, window: window.innerWidth }));
}

(async () => {
  const input = JSON.parse(process.argv[2]);
  const browser = await chromium.launch({
    executablePath: process.env.STRATA_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const seen = { errors: [] };
  try {
    const { context, page } = await login(browser, input.base, input.token);
    page.on("pageerror", (e) => seen.errors.push(String(e)));
    seen.after_login = new URL(page.url()).pathname;
    await ready(page, input.base + "/jobs");
    seen.encodings = await encodings(page);

    // Strings thousands of characters long: every page stays as wide as the window.
    seen.widths = { jobs: await width(page) };
    seen.executable_titles = await page.$$eval("#jobs tbody td span.short", (s) => s.map((x) => x.title));
    await ready(page, `${input.base}/job/${input.long_job}`);
    seen.widths.job = await width(page);
    seen.report_cut = await page.$$eval(".report td span.cut", (s) => s.map((x) => x.textContent.length));
    if (seen.report_cut.length) {
      await page.click(".report td button.expand >> nth=-1");
      seen.report_expanded = await page.$$eval(".report td span.cut", (s) => s.map((x) => x.textContent));
      seen.widths.job_expanded = await width(page);
    }
    await ready(page, input.base + "/user");
    seen.widths.user = await width(page);
    seen.program_titles = await page.$$eval("#trends h3.program span.short", (s) => s.map((x) => x.title));

    // Log out with the page's button; the cookie the browser had opens nothing afterwards.
    const cookie = (await context.cookies()).find((c) => c.name === "strata_session");
    await Promise.all([page.waitForNavigation(), page.click("nav form button")]);
    seen.after_logout = new URL(page.url()).pathname;
    const again = await context.request.get(input.base + "/api/me", { headers: { Cookie: `strata_session=${cookie.value}` } });
    seen.old_cookie_after_logout = again.status();
    await context.close();
    process.stdout.write(JSON.stringify(seen));
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(String((e && e.stack) || e));
  process.exit(1);
});
