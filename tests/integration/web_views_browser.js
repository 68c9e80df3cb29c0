// Drives headless Chromium (Debian's, through playwright-core) for test_web_views.py. Input
// (argv[2]): JSON {base, token, admin_token, jobs: {record id: job id}}. Output (stdout): JSON of
// what the browser saw; the test makes the assertions.
const { attribute, login, main, ready, text } = require("./web_testlib.js");

// The programs whose charts the trends page drew, and its charts' canvas ids.
async function drawn(page) {
  return {
    drawn: await page.$$eval("#trends h3.program", (h) => h.map((x) => (x.querySelector("span.short") || x).title || x.textContent)),
    charts: await page.$$eval("#trends canvas", (c) => c.map((x) => x.id)),
  };
}

// What each chart of the page draws: its series' colours, its value axis's title and start.
async function charts(page, name) {
  return page.evaluate((name) => (window.strataCharts || []).map((c) => {
    const value = c.options.indexAxis === "y" ? "x" : "y";
    const scale = c.options.scales[value] || {};
    return {
      page: name, id: c.canvas.id, colours: c.data.datasets.map((d) => d.borderColor || null),
      value_title: scale.title && scale.title.display ? scale.title.text : "",
      value_min: c.scales[value].min,
    };
  }), name);
}

// A job page's charts and notes.
async function jobPage(page, url) {
  await ready(page, url);
  return {
    sizes_chart: (await page.$("canvas#sizes")) !== null,
    sizes_note: await text(page, "#sizes-note"),
    outside: await text(page, "#outside-wall"),
    imbalance: await page.evaluate(() => {
      const c = (window.strataCharts || []).find((x) => x.canvas.id === "imbalance");
      return c ? c.data.labels : null;
    }),
    // The report's style on its own headings, the page's on the page's.
    font_sizes: await page.evaluate(() => Object.fromEntries(["main > h1", ".report h1", ".report h2"].map((s) => {
      const e = document.querySelector(s);
      return [s, e ? getComputedStyle(e).fontSize : null];
    }))),
  };
}

main(async (browser, input) => {
  const seen = { errors: [] };
  const { page } = await login(browser, input.base, input.token, seen.errors);

  // The trends page: every program in a table, the charts of some, any chosen.
  await ready(page, input.base + "/user");
  seen.trends = {
    rows: await page.$$eval("#programs tbody tr", (r) => r.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent))),
    note: await text(page, "#programs-note"),
    ...(await drawn(page)),
  };
  if (seen.trends.rows.length) {
    // The last modelled program in the table (drawn only when chosen).
    const href = await page.$$eval("#programs tbody tr", (r) =>
      r.filter((tr) => tr.cells[4].textContent === "yes").pop().querySelector("a").getAttribute("href"));
    await ready(page, input.base + href);
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
  seen.charts = await charts(page, "user");

  // Job pages: one without message sizes (with a comparison), one with a long MPI_Init.
  seen.job = await jobPage(page, `${input.base}/job/${input.jobs["rare:4:5"]}`);
  seen.charts.push(...(await charts(page, "job")));
  seen.init = await jobPage(page, `${input.base}/job/${input.jobs["init:1"]}`);
  seen.charts.push(...(await charts(page, "init")));
  await ready(page, `${input.base}/job/${input.jobs["newer:2"]}`);
  seen.newer = await page.$$eval("#compare-table tr", (r) => r.slice(1).map((tr) => {
    const td = tr.querySelectorAll("td");
    return [td[0].textContent, td[3].textContent];
  }));

  // Whose job and how it ended.
  seen.facts = {};
  for (const [name, record] of [["claim", "claim:1"], ["abort", "abort:1"], ["signal", "signal:1"], ["init", "init:1"], ["exit", "exit:1"]]) {
    await ready(page, `${input.base}/job/${input.jobs[record]}`);
    seen.facts[name] = { owner: await text(page, "#job-owner"), mismatch: await text(page, "#owner-mismatch"), ended: await text(page, "#job-ended"), hang: await text(page, "#job-hang pre") };
  }
  await ready(page, `${input.base}/jobs?min_mpi=lots`);
  seen.bad_number = await text(page, "p.error");

  // Jobs ranked by MPI core-hours, with how each ended and whether it was flagged.
  const rows = () => page.$$eval("#jobs tbody tr", (r) => r.map((tr) => [...tr.cells].map((td) => td.textContent)));
  await ready(page, `${input.base}/jobs?sort=mpi_hours&per_page=10`);
  seen.ranked = {
    head: await page.$$eval("#jobs thead th", (h) => h.map((x) => x.textContent)),
    rows: await rows(),
    sort: await page.$eval("#filter select[name=sort]", (s) => s.value).catch(() => null),
  };
  await ready(page, `${input.base}/jobs?q=rare&per_page=50`);
  seen.ranked.rare = await rows();
  await ready(page, `${input.base}/jobs?q=abort:&per_page=50`);
  seen.ranked.abort = await rows();

  const admin = await login(browser, input.base, input.admin_token, seen.errors);
  await ready(admin.page, input.base + "/site");
  seen.charts.push(...(await charts(admin.page, "site")));
  seen.critical = {
    title: await admin.page.$$eval("#app h2", (h) => h.map((x) => x.textContent).find((t) => t.startsWith("Critical")) || null),
    ...(await admin.page.evaluate(() => {
      const head = [...document.querySelectorAll("#jobs thead th")].map((x) => x.textContent);
      const at = head.indexOf("MPI core-h");
      const rows = [...document.querySelectorAll("#jobs tbody tr")].map((tr) => [...tr.cells].map((td) => td.textContent));
      return { jobs: rows.map((r) => r[0]), hours: at < 0 ? [] : rows.map((r) => Number(r[at])) };
    })),
  };
  return seen;
});
