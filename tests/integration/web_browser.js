// Drives headless Chromium (Debian's, through playwright-core) through the web interface for
// test_web.py. Input (argv[2]): JSON {base, users: [{name, token, own_job, other_job,
// flagged_job, mpi_t_job (optional)}]}.
// Output (stdout): JSON with what each user saw; test_web.py makes the assertions.
const { main, newPage, ready } = require("./web_testlib.js");

async function charts(page) {
  await ready(page);
  return page.evaluate(() =>
    (window.strataCharts || []).map((c) => ({
      id: c.canvas.id,
      type: c.config.type,
      datasets: c.data.datasets.length,
      points: c.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null && v !== undefined).length, 0),
      missing_labels: (c.data.labels || []).filter((l) => l === undefined || l === null).length,
      last_dataset_points: c.data.datasets.length ? c.data.datasets[c.data.datasets.length - 1].data.length : 0,
      width: c.canvas.getBoundingClientRect().width,
      height: c.canvas.getBoundingClientRect().height,
    })));
}

async function visit(user, browser, base) {
  const errors = [];
  const { context, page } = await newPage(browser, errors);
  const seen = { name: user.name, errors };
  await page.goto(base + "/jobs");
  seen.redirected_to_login = page.url().endsWith("/login");
  await page.fill("input[name=token]", user.token);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  seen.after_login = new URL(page.url()).pathname;
  await ready(page);
  seen.list_owners = await page.$$eval("#jobs tbody tr", (rows) => [...new Set(rows.map((r) => r.dataset.owner))]);
  seen.list_rows = await page.$$eval("#jobs tbody tr", (rows) => rows.length);
  seen.total = await page.textContent("#total");
  seen.cookie = (await context.cookies()).map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite }));

  let r = await page.goto(`${base}/job/${user.own_job}`);
  seen.own_job_status = r.status();
  seen.own_job_charts = await charts(page);
  seen.own_job_script_tags = await page.$$eval("main script", (s) => s.length);

  r = await page.goto(`${base}/job/${user.other_job}`);
  seen.other_job_status = r.status();
  seen.other_job_api_status = await page.evaluate(async (id) => (await fetch(`/api/job/${id}`)).status, user.other_job);

  r = await page.goto(`${base}/user`);
  seen.user_status = r.status();
  seen.user_charts = await charts(page);
  seen.trend_programs = await page.$$eval("#trends h3.program", (hs) => hs.map((h) => h.textContent));

  if (user.flagged_job) {
    r = await page.goto(`${base}/job/${user.flagged_job}`);
    seen.flagged_job_status = r.status();
    seen.flagged_job_charts = await charts(page);
    seen.flagged_job_regression = await page.textContent("#regression");
    seen.flagged_job_compare_rows = await page.$$eval("#compare-table tr", (rows) => rows.map((t) => t.textContent).join("\n"));
  }

  if (user.mpi_t_job) {
    r = await page.goto(`${base}/job/${user.mpi_t_job}`);
    seen.mpi_t_job_status = r.status();
    await ready(page);
    seen.mpi_t_job_text = await page.evaluate(() => document.body.innerText);
    seen.mpi_t_job_images = await page.$$eval("main img", (i) => i.length);
    seen.mpi_t_job_partners = {
      first: await page.$$eval("#partners-pairs tbody tr:first-child td", (c) => c.map((x) => x.textContent)),
      rows: await page.$$eval("#partners-pairs tbody tr", (r) => r.length),
      last: await page.$$eval("#partners-pairs tbody tr:last-child td", (c) => c.map((x) => x.textContent)),
      whole: await page.textContent("#partners-whole"),
      map: await page.$$eval("#partners-heat-map svg", (s) => s.length),
      cells: await page.$$eval("#partners-heat-map svg rect.pair", (s) => s.length),
      report_maps: await page.$$eval(".report svg", (s) => s.length), // the page's is the one
    };
    // The two-sided kinds together, as the report's heat map summed them.
    await page.selectOption("#heat-map-view select[name=kind]", { label: "every two-sided kind" }).catch(() => null);
    seen.mpi_t_job_partners.two_sided = await page.$$eval("#partners-heat-map svg rect.pair title", (t) => t.map((x) => x.textContent).sort());
    seen.mpi_t_job_collectives = {
      rows: await page.$$eval("#collectives-table tbody tr", (r) => r.map((tr) => [...tr.cells].map((td) => td.textContent))),
      bars: await page.$$eval("table.member-bars span.bar", (s) => s.length),
    };
  }

  r = await page.goto(`${base}/site`);
  seen.site_status = r.status();
  seen.site_charts = r.status() === 200 ? await charts(page) : [];
  if (r.status() === 200) {
    seen.site_totals = await page.textContent("#site-totals");
    seen.site_critical_links = await page.$$eval("#jobs tbody tr td:first-child a", (a) => a.map((x) => x.getAttribute("href")));
  }

  await context.close();
  return seen;
}

main(async (browser, input) => {
  const out = [];
  for (const u of input.users) out.push(await visit(u, browser, input.base));
  return out;
});
