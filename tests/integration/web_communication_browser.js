// Drives headless Chromium for test_web_communication.py. Input (argv[2]): JSON {base, token,
// report (the path of a standalone HTML report), jobs: {record id: job id}}. Output (stdout):
// JSON of what the browser saw.
const { login, main, ready, rows, text } = require("./web_testlib.js");

main(async (browser, input) => {
  const seen = { errors: [] };
  const { page } = await login(browser, input.base, input.token, seen.errors);
  const job = `${input.base}/job/${input.jobs["comm:300"]}`;
  await ready(page, job);

  // What the heat map shows now: each cell's title, the axes' labels, the form's ranks.
  const heat = async () => ({
    cells: await page.$$eval("#partners-heat-map svg rect.pair title", (t) => t.map((x) => x.textContent)),
    row_labels: await page.$$eval("#partners-heat-map svg text.row-label", (t) => t.map((x) => x.textContent)),
    col_labels: await page.$$eval("#partners-heat-map svg text.col-label", (t) => t.map((x) => x.textContent)),
    form: await page.$$eval("#heat-map-view input[type=number]", (f) => f.map((x) => x.value)),
    caption: await text(page, "#heat-map-caption"),
    url: page.url().replace(input.base, ""),
    svgs: await page.$$eval("#partners-heat-map svg", (s) => s.length),
  });
  // The centre of the plot's bin (row, column) of the current view, whether a cell is drawn there.
  const binCentre = async (row, col) => page.$eval("#partners-heat-map svg", (svg, at) => {
    svg.scrollIntoView({ block: "center" });
    const box = svg.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    const plot = svg.querySelector("rect");
    const bins = (Number(document.querySelector("#heat-map-view input[name=rows_last]").value) -
      Number(document.querySelector("#heat-map-view input[name=rows_first]").value) + 1);
    const per = Math.ceil(bins / 64);
    const cell = Number(plot.getAttribute("width")) / Math.ceil(bins / per);
    const margin = Number(plot.getAttribute("x"));
    return { x: box.left + (margin + (at[1] + 0.5) * cell) * scale, y: box.top + (margin + (at[0] + 0.5) * cell) * scale };
  }, [row, col]);

  // The heat maps a page shows (each svg of role img, by its class), the report's among them.
  const maps = async () => ({
    maps: await page.$$eval("svg[role=img]", (s) => s.map((x) => x.getAttribute("class"))),
    report_maps: await page.$$eval(".report svg", (s) => s.length),
    report_headings: await page.$$eval(".report h2", (h) => h.map((x) => x.textContent)),
    cells: await page.$$eval("svg[role=img] rect.pair", (r) => r.length),
  });
  seen.maps = { job: await maps() };

  seen.heat = { whole: await heat() };

  // A drag from the cell of ranks 100-104 to 105-109 to the bin of 135-139 to 140-144.
  const a = await binCentre(20, 21), b = await binCentre(27, 28);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2);
  await page.mouse.move(b.x, b.y);
  await page.mouse.up();
  seen.heat.drag = await heat();

  // The view's address restores it.
  await ready(page, input.base + seen.heat.drag.url);
  seen.heat.restored = await heat();

  // The ranks typed into the form.
  const type = async (values) => {
    for (const [name, value] of Object.entries(values)) await page.fill(`#heat-map-view input[name=${name}]`, String(value));
    await page.click("#heat-map-view button[type=submit]");
  };
  await type({ rows_first: 0, rows_last: 9, cols_first: 145, cols_last: 160 });
  seen.heat.typed = await heat();

  // The whole job again, then the wheel over the cell of ranks 50-54 to 50-54.
  await page.click("#heat-map-view button[name=whole]");
  const w = await binCentre(10, 10);
  await page.mouse.move(w.x, w.y);
  await page.mouse.wheel(0, -100);
  await page.waitForFunction(() => document.querySelector("#heat-map-view input[name=rows_last]").value !== "299");
  seen.heat.wheel = await heat();
  await page.click("#heat-map-view button[name=out]");
  seen.heat.zoomed_out = await heat();

  // One kind alone.
  await page.selectOption("#heat-map-view select[name=kind]", { label: "put" });
  seen.heat.put_only = await heat();
  seen.heat.kinds = await page.$$eval("#heat-map-view select[name=kind] option", (o) => o.map((x) => x.textContent));
  await page.selectOption("#heat-map-view select[name=kind]", { label: "every two-sided kind" }).catch(() => null);
  seen.heat.two_sided = await heat();
  await page.selectOption("#heat-map-view select[name=kind]", { label: "every kind" });
  await type({ rows_first: 10, rows_last: 20, cols_first: 10, cols_last: 20 });
  await page.click("#heat-map-view button[name=whole]");
  seen.heat.back_to_whole = await heat();

  // A click on the whole job's cell of ranks 100-104 to 105-109: that cell's ranks alone.
  const c = await binCentre(20, 21);
  await page.mouse.click(c.x, c.y);
  await page.waitForFunction(() => document.querySelector("#heat-map-view input[name=rows_last]").value !== "299");
  seen.heat.click = await heat();

  // The collectives by communicator, and each member of the small ones as a bar.
  seen.collectives = {
    rows: await rows(page, "#collectives-table"),
    elsewhere: await text(page, "#collectives-elsewhere"),
    bar_tables: await page.$$eval("table.member-bars", (t) => t.map((x) => x.dataset.members)),
    bars: await page.$$eval("#collective-members-1 tbody tr", (r) => r.map((tr) =>
      [tr.cells[0].textContent, tr.cells[1].textContent, tr.cells[2].textContent, tr.querySelector("span.bar").getBoundingClientRect().width])),
    bar_title: await page.$eval("#collective-members-1 tbody tr:nth-child(4) span.bar", (s) => s.title).catch(() => null),
    more: await text(page, "#collective-members-more"),
  };
  if (seen.collectives.more) await page.click("#collective-members-more");
  seen.collectives.bar_tables_all = await page.$$eval("table.member-bars", (t) => t.map((x) => x.dataset.members));

  // A job whose pairs the store does not hold, and the standalone report.
  await ready(page, `${input.base}/job/${input.jobs["old:300"]}`);
  seen.maps.old_job = await maps();
  await page.goto("file://" + input.report);
  seen.maps.standalone = await maps();
  return seen;
});
