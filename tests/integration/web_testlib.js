// What the Chromium scripts of the web suites (web_*_browser.js) share: Debian's headless
// Chromium through playwright-core, logging in with a token, waiting for a page's data, reading
// its text, and the run itself: input as JSON in argv[2], what the browser saw as JSON on stdout
// (the Python test makes the assertions), any failure on stderr with exit code 1.
const { chromium } = require("playwright-core");

function launch() {
  return chromium.launch({
    executablePath: process.env.STRATA_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

// Every uncaught error of a page is pushed to `errors` (the tests expect none).
async function newPage(browser, errors) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  return { context, page };
}

// A new browser context logged in with `token` through the login form.
async function login(browser, base, token, errors) {
  const { context, page } = await newPage(browser, errors);
  await page.goto(base + "/jobs");
  await page.fill("input[name=token]", token);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  return { context, page };
}

// Goes to `url` (if given) and waits until the page has drawn its data; the HTTP status.
async function ready(page, url) {
  const r = url ? await page.goto(url) : null;
  // data-drawn: after data-ready, once the charts below the first screen are drawn too.
  await page.waitForSelector("body[data-drawn]", { timeout: 60000 });
  return r ? r.status() : null;
}

// An element's text, or null when the page has none (before a feature, the test says what is
// missing rather than timing out).
const text = (page, selector) => page.$eval(selector, (e) => e.textContent).catch(() => null);
const attribute = (page, selector, name) => page.$eval(selector, (e, n) => e.getAttribute(n), name).catch(() => null);
// The text of each cell of each body row of a table.
const rows = (page, selector) => page.$$eval(`${selector} tbody tr`, (r) => r.map((tr) => [...tr.cells].map((td) => td.textContent)));

// Runs `visit(browser, input)` and prints what it returns as JSON.
function main(visit) {
  (async () => {
    const input = JSON.parse(process.argv[2]);
    const browser = await launch();
    try {
      process.stdout.write(JSON.stringify(await visit(browser, input)));
    } finally {
      await browser.close();
    }
  })().catch((e) => {
    console.error(String((e && e.stack) || e));
    process.exit(1);
  });
}

module.exports = { attribute, login, main, newPage, ready, rows, text };
