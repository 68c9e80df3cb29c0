// Drives headless Chromium (Debian's, through playwright-core) for test_web_pages.py. Input
// (argv[2]): JSON {base, token, admin_token, long_job}. Output (stdout): JSON of what the browser saw;
// the test makes the assertions.
const { login, main, ready } = require("./web_testlib.js");

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

main(async (browser, input) => {
  const seen = { errors: [] };
  const { context, page } = await login(browser, input.base, input.token, seen.errors);
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

  // Lists: a real count, a last page, and paging past it stops.
  const list = async (query) => {
    await ready(page, `${input.base}/jobs?${query}`);
    return {
      total: await page.textContent("#total"),
      rows: await page.$$eval("#jobs tbody tr", (r) => r.length),
      links: await page.$$eval("#pager a", (a) => a.map((x) => [x.textContent, Number(x.dataset.page)])),
    };
  };
  seen.lists = { first: await list("per_page=5"), past: await list("per_page=5&page=99"), one: await list("q=test:long") };

  // Log out with the page's button; the cookie the browser had opens nothing afterwards.
  const cookie = (await context.cookies()).find((c) => c.name === "strata_session");
  await Promise.all([page.waitForNavigation(), page.click("nav form button")]);
  seen.after_logout = new URL(page.url()).pathname;
  const again = await context.request.get(input.base + "/api/me", { headers: { Cookie: `strata_session=${cookie.value}` } });
  seen.old_cookie_after_logout = again.status();
  await context.close();

  // The site page's period, as ?days=N says and as its control changes it.
  const admin = await login(browser, input.base, input.admin_token, seen.errors);
  const period = async () => ({
    totals: await admin.page.textContent("#site-totals"),
    chosen: await admin.page.$eval("#period select", (s) => s.value),
  });
  await ready(admin.page, input.base + "/site");
  seen.site = { default: await period() };
  await ready(admin.page, input.base + "/site?days=7");
  seen.site.asked = await period();
  await Promise.all([admin.page.waitForNavigation(), admin.page.selectOption("#period select", "90")]);
  await ready(admin.page);
  seen.site.chosen = { url: admin.page.url().replace(input.base, ""), ...(await period()) };
  await admin.context.close();
  return seen;
});
