// Drives headless Chromium for test_web_lists.py. Input (argv[2]): JSON {base, token,
// admin_token, jobs: {record id: job id}}. Output (stdout): JSON of what the browser saw.
const fs = require("fs");
const { login, main, ready, rows, text } = require("./web_testlib.js");

const value = (page, selector) => page.$eval(selector, (s) => s.value).catch(() => null);

main(async (browser, input) => {
  const seen = { errors: [] };
  const { page } = await login(browser, input.base, input.token, seen.errors);

  // Jobs ranked by waste, the user's own; the CSV of the table as the link downloads it.
  await ready(page, input.base + "/waste");
  seen.waste = {
    jobs: await rows(page, "#waste-jobs"),
    users: (await page.$("#waste-users")) ? await rows(page, "#waste-users") : null,
    programs: await rows(page, "#waste-programs"),
    period: await value(page, "#period select[name=days]"),
  };
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("a.csv[data-for=waste-jobs]")]);
  seen.waste.csv_name = download.suggestedFilename();
  seen.waste.csv = fs.readFileSync(await download.path(), "utf8");

  // The period picker of each list page.
  const period = async (url) => { await ready(page, input.base + url); return value(page, "select[name=days]"); };
  seen.periods = { jobs: await period("/jobs"), jobs7: await period("/jobs?days=7"), waste: await period("/waste") };
  seen.periods.waste7 = await period("/waste?days=7");
  seen.waste7 = (await rows(page, "#waste-jobs")).map((r) => r[0]);
  seen.periods.flagged = await period("/flagged");

  // Flagged jobs: the regressions and the critical jobs.
  seen.flagged = {
    regressions: await rows(page, "#regressions"),
    critical: await rows(page, "#critical-jobs"),
    critical_title: await page.$$eval("#app h2", (h) => h.map((x) => x.textContent).join("\n")),
  };

  // The communication matrix as a heat map on the job page, from the store's pairs: the page's
  // own, and none in the report it carries.
  await ready(page, `${input.base}/job/${input.jobs["wait:1"]}`);
  seen.heat_map = {
    maps: await page.$$eval("main svg[role=img]", (s) => s.map((x) => x.getAttribute("class"))),
    report_maps: await page.$$eval(".report svg", (s) => s.length),
    cells: await page.$$eval("#partners-heat-map svg rect.pair title", (t) => t.map((x) => x.textContent)),
    caption: await text(page, "#heat-map-caption"),
    width: await page.$eval("#partners-heat-map svg", (s) => s.getBoundingClientRect().width).catch(() => null),
  };
  // Each chart as a PNG: the imbalance chart's file as downloaded.
  seen.png = { links: await page.$$eval("a.png", (a) => a.map((x) => x.dataset.for)) };
  const [image] = await Promise.all([page.waitForEvent("download"), page.click("a.png[data-for=imbalance]")]);
  const bytes = fs.readFileSync(await image.path());
  seen.png.name = image.suggestedFilename();
  seen.png.size = bytes.length;
  seen.png.signature = [...bytes.subarray(0, 8)];
  seen.png.width = bytes.length >= 24 ? bytes.readUInt32BE(16) : 0; // IHDR
  // Why, in sentences: [kind, text, tool] of each.
  seen.why = await page.$$eval("#why li", (l) => l.map((x) => [x.dataset.kind, x.textContent, x.querySelector(".tool").dataset.tool]));

  // Any two runs of a program: chosen on the job page, shown side by side.
  await ready(page, `${input.base}/job/${input.jobs["solver:5"]}`);
  seen.compare = { choices: await page.$$eval("#compare-with select option", (o) => o.map((x) => x.value)) };
  if (seen.compare.choices.length) {
    await page.selectOption("#compare-with select", String(input.jobs["solver:0"]));
    await Promise.all([page.waitForNavigation(), page.click("#compare-with button")]);
    await ready(page);
    seen.compare.url = page.url().replace(input.base, "");
    seen.compare.rows = await rows(page, "#compare-runs");
    seen.compare.highlighted = await page.$$eval("#compare-runs tbody tr", (r) =>
      r.filter((tr) => tr.querySelector("span.worse, span.better")).map((tr) => tr.cells[0].textContent));
  }

  // A view's link restores it: the jobs list's search, sort, period and size as the URL says.
  await ready(page, `${input.base}/jobs?q=solver&sort=mpi_hours&days=7&min_ranks=4`);
  seen.shared = {
    form: await page.$$eval("#filter input, #filter select", (f) => f.filter((x) => x.name).map((x) => [x.name, x.value])),
    rows: await rows(page, "#jobs"),
  };

  // The admin drills down: the site page's user, their program, its job.
  const admin = await login(browser, input.base, input.admin_token, seen.errors);
  seen.periods.site = await (async () => { await ready(admin.page, input.base + "/site"); return value(admin.page, "select[name=days]"); })();
  seen.slurm = { accounts: await rows(admin.page, "#site-accounts"), partitions: await rows(admin.page, "#site-partitions") };
  const form = (page) => page.$$eval("#filter input, #filter select", (f) => Object.fromEntries(f.filter((x) => x.name).map((x) => [x.name, x.value])));
  // An account's and a partition's jobs, from the site page's rows.
  const links = (selector) => admin.page.$$eval(`${selector} tbody a`, (a) => a.map((x) => x.getAttribute("href")));
  seen.slurm_drill = { account_links: await links("#site-accounts"), partition_links: await links("#site-partitions") };
  if (seen.slurm_drill.account_links.length) {
    await Promise.all([admin.page.waitForNavigation(), admin.page.click('#site-accounts tbody a:text-is("chem")')]);
    await ready(admin.page);
    seen.slurm_drill.url = admin.page.url().replace(input.base, "");
    seen.slurm_drill.form = await form(admin.page);
    seen.slurm_drill.rows = await rows(admin.page, "#jobs");
    // Copy link, with the browser's clipboard allowed for the site: what the button put there.
    await admin.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: input.base });
    const copy = async () => {
      await admin.page.click("button.copy-link");
      await admin.page.waitForSelector(".copy-note:not(:empty)");
      return {
        url: admin.page.url(),
        note: await text(admin.page, ".copy-note"),
        clipboard: await admin.page.evaluate(() => navigator.clipboard.readText()),
      };
    };
    seen.copied = { jobs: await copy() };
    await ready(admin.page, `${input.base}/job/${input.jobs["wait:1"]}`);
    seen.copied.job = await copy();
    await ready(admin.page, input.base + "/site");
  }
  await ready(admin.page, input.base + "/jobs?partition=compute");
  seen.slurm_drill.partition_rows = await rows(admin.page, "#jobs");
  // The exit code: a column, a sort order and a filter of the jobs list.
  await ready(admin.page, input.base + "/jobs?sort=exit&per_page=500");
  const exitColumn = await admin.page.$$eval("#jobs thead th", (h) => h.findIndex((x) => x.textContent === "Exit"));
  seen.exit = {
    head: await admin.page.$$eval("#jobs thead th", (h) => h.map((x) => x.textContent)),
    rows: await admin.page.$$eval("#jobs tbody tr", (r, c) => r.map((tr) => [tr.cells[0].textContent, tr.cells[c].textContent, tr.cells[c].title]), exitColumn),
    sort: (await form(admin.page)).sort,
  };
  await ready(admin.page, input.base + "/jobs?exit=nonzero");
  seen.exit.failed_rows = (await rows(admin.page, "#jobs")).map((r) => r[0]);
  seen.exit.failed_form = (await form(admin.page)).exit;
  await ready(admin.page, input.base + "/site");
  seen.drill = {};
  const follow = async (selector) => {
    await Promise.all([admin.page.waitForNavigation(), admin.page.click(selector)]);
    await ready(admin.page);
    return admin.page.url().replace(input.base, "");
  };
  const userLink = await admin.page.$$eval("#site-users a", (a) => a.map((x) => x.textContent));
  const a = userLink.findIndex((u) => u === "strata-wta");
  if (a >= 0) {
    seen.drill.user_url = await follow(`#site-users tbody tr:nth-child(${a + 1}) a`);
    seen.drill.program_url = await follow("#waste-programs tbody tr:first-child td:first-child a");
    await follow("#jobs tbody tr:first-child td:first-child a");
    seen.drill.job_title = await text(admin.page, "main h1");
  }
  return seen;
});
