"""What the web pages show and how: every program of a user on the trends page (not only those
with the most runs) and a flagged job's link to its program's history; charts that can be read
(distinct colours, units, axes from zero, no empty chart, MPI_Init apart from the wall time,
imbalance by size, "new" only for routines no earlier run had); the facts of a job (its real
owner against what the record claims, how it ended); jobs ranked by MPI core-hours. One SQLite
store of hand-made records owned by test_web.py's users, one server, headless Chromium
(web_views_browser.js). Needs root (useradd, runuser)."""
import unittest

from test_site import make_record
from web_testlib import ADMIN, DAY, USER_A, USER_B, ServedStore, create_users, remove_users, uid_of

PROGRAMS = 9  # programs of USER_A run often, beside the rarely run one that regressed
RARE = "/home/a/rare"


def setUpModule():
    create_users()


def tearDownModule():
    remove_users()


def records(uid_a, uid_b, now):
    """{file name: (record, owner uid)} of the store."""
    out = {}

    def add(name, rec, uid=uid_a):
        out[name] = (rec, uid)

    def run(job_id, ranks, wall, routines, end, executable):
        rec = make_record(job_id, USER_A, uid_a, ranks, wall, routines, end, executable=executable)
        rec["job"]["argv"] = [executable]  # no arguments: the program is named by its path
        return rec

    # Nine programs with four runs at each of four sizes; one with fewer runs whose last run at
    # 4 ranks is 60 % slower in MPI_Allreduce (a flagged regression).
    for k in range(PROGRAMS):
        for ranks in (1, 2, 4, 8):
            for n in range(4):
                t = 0.01 + 0.02 * ranks
                add(f"p{k}-{ranks}-{n}.json", run(f"p{k}:{ranks}:{n}", ranks, 2.0 + t, {
                    "MPI_Allreduce": (50 * ranks, t * ranks, 400 * ranks)},
                    now - 5 * DAY + (k * 40 + n * 8 + ranks) * 300, f"/home/a/prog{k}"))
    for ranks in (1, 2, 4, 8):
        for n in range(6 if ranks == 4 else 3):
            jitter = 1 + 0.005 * ((n * 37 + ranks) % 5 - 2)
            t = (0.01 + 0.02 * ranks) * jitter * (1.6 if (ranks, n) == (4, 5) else 1.0)
            add(f"rare-{ranks}-{n}.json", run(f"rare:{ranks}:{n}", ranks, 2.0 * jitter + t, {
                "MPI_Allreduce": (50 * ranks, t * ranks, 400 * ranks)},
                now - 3 * DAY + (n * 8 + ranks) * 600, RARE))
    # A job whose MPI_Init took longer than anything it did after: 4 s of a 3 s wall time.
    init = run("init:1", 4, 3.0, {"MPI_Init": (4, 16.0, 0), "MPI_Bcast": (40, 0.3, 800),
                                  "MPI_Allreduce": (40, 1.0, 800), "MPI_Send": (40, 1.6, 800)},
               now - 2 * DAY, "/home/a/init")
    for name, most in (("MPI_Init", 4.0), ("MPI_Bcast", 0.1), ("MPI_Allreduce", 0.3),
                       ("MPI_Send", 0.5)):
        init["routines"][name]["per_rank"]["time_s"] = {"min": most / 2, "mean": most * 0.75,
                                                        "max": most, "max_rank": 1}
    init["routines"]["MPI_Send"]["size_histogram"] = [[256, 40]]
    init["job"].update({"mpi_time_s": 2.9, "mpi_percent": 100 * 2.9 / 12})  # MPI_Init not in it
    add("init.json", init)
    # A program whose second run skipped MPI_Bcast and whose third added MPI_Gather.
    for n, names in enumerate((("MPI_Send", "MPI_Bcast"), ("MPI_Send",),
                               ("MPI_Send", "MPI_Bcast", "MPI_Gather"))):
        add(f"newer-{n}.json", run(f"newer:{n}", 2, 2.0, {r: (20, 0.1, 160) for r in names},
                                   now - DAY + n * 600, "/home/a/newer"))
    # A's file whose record names B; a job that called MPI_Abort(2); one ended by a signal.
    claim = run("claim:1", 2, 2.0, {"MPI_Send": (20, 0.1, 160)}, now - DAY, "/home/a/claim")
    claim["job"].update({"user": USER_B, "uid": uid_b})
    add("claim.json", claim)
    aborted = run("abort:1", 2, 2.0, {"MPI_Send": (20, 0.1, 160)}, now - DAY, "/home/a/abort")
    aborted["job"].update({"status": "aborted", "abort_code": 2})
    add("abort.json", aborted)
    # Finalized, then exit(2): the code the profile added at the process's exit.
    exited = run("exit:1", 2, 2.0, {"MPI_Send": (20, 0.1, 160)}, now - DAY, "/home/a/abort")
    exited["job"]["exit_code"] = 2
    add("exit.json", exited)
    signalled = run("signal:1", 2, 2.0, {"MPI_Send": (20, 0.1, 160)}, now - DAY, "/home/a/abort")
    signalled["job"].update({"status": "signal", "signal": 11})
    signalled["hang"] = {"format": "strata.hang/1", "verdict": "hang",
                         "text": "DEADLOCK: ranks 0-1 wait for each other in a cycle:\n"
                                 "  rank 0 in MPI_Wait at <b>x.c</b>:9 (main)\n"}
    add("signal.json", signalled)
    # Critical jobs (MPI over 15 %): short test runs, the newest, and one that lost 19.2 MPI
    # core-hours (64 ranks for an hour, 30 % in MPI) three weeks ago.
    for n in range(5):
        add(f"tiny-{n}.json", run(f"tiny:{n}", 1, 1.0, {"MPI_Barrier": (10, 0.5, 0)},
                                  now - 600 + n, "/home/a/tiny"))
    add("big.json", run("big:1", 64, 3600.0, {"MPI_Allreduce": (64000, 0.3 * 3600 * 64, 10 ** 9)},
                        now - 20 * DAY, "/home/a/big"))
    return out


class WebViewsTest(ServedStore, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.serve_records("strata-web-views-", records, users=(USER_A, ADMIN), jobs_as=USER_A)

    def browse(self):
        """What web_views_browser.js saw: one visit for every test that asks."""
        return self.browse_jobs_once("web_views_browser.js")

    # ---- the trends page ----

    def test_trends_page_lists_every_program_and_draws_the_flagged_one(self):
        seen = self.browse()["trends"]
        self.assertEqual(len(seen["rows"]), PROGRAMS + 7, seen)  # with init, newer, claim, abort, tiny, big
        # The rarely run program that regressed: listed first, its flag counted, its charts drawn.
        self.assertEqual(seen["rows"][0], [RARE, "15", "1, 2, 4, 8", "1", "yes"])
        self.assertEqual(sorted(r[0] for r in seen["rows"][1:PROGRAMS + 1]),
                         [f"/home/a/prog{k}" for k in range(PROGRAMS)])
        self.assertEqual(sorted(r[0] for r in seen["rows"][PROGRAMS + 1:]),
                         ["/home/a/abort", "/home/a/big", "/home/a/claim", "/home/a/init",
                          "/home/a/newer", "/home/a/tiny"])
        self.assertIn("16 programs; charts of 8 of the 10 modelled", seen["note"])
        self.assertEqual(len(seen["drawn"]), 8)
        self.assertEqual(seen["drawn"][0], RARE)
        # Any program chosen in the table: its charts (the last modelled one, the 10th row).
        self.assertEqual(seen["chosen"]["drawn"], [seen["rows"][PROGRAMS][0]])
        self.assertEqual(len(seen["chosen"]["charts"]), 2)

    def test_flagged_job_links_to_its_programs_history(self):
        seen = self.browse()["flagged"]
        self.assertTrue(seen["banner"].startswith("Regression: MPI"), seen)
        self.assertRegex(seen["link"], r"^/user\?program=\d+#program-\d+$")
        self.assertEqual(seen["followed"]["drawn"], [RARE])
        self.assertEqual(len(seen["followed"]["charts"]), 2)  # its scaling and its history

    # ---- charts ----

    def test_charts_have_distinct_colours_units_and_axes_from_zero(self):
        charts = self.browse()["charts"]
        pages = {c["page"] for c in charts}
        self.assertEqual(pages, {"job", "init", "user", "site"})
        self.assertGreaterEqual(len(charts), 14)
        for c in charts:
            where = (c["page"], c["id"])
            colours = [str(x).lower() for x in c["colours"]]
            self.assertTrue(all(colours), where)  # none left to the library's grey default
            self.assertEqual(len(set(colours)), len(colours), where)
            self.assertTrue(c["value_title"], where)
            self.assertRegex(c["value_title"], r"\(s\)|%|hours|jobs|messages", where)
            self.assertEqual(c["value_min"], 0, where)

    def test_job_without_message_sizes_has_a_note_not_an_empty_chart(self):
        seen = self.browse()
        self.assertFalse(seen["job"]["sizes_chart"])
        self.assertIn("no message sizes", seen["job"]["sizes_note"])
        self.assertTrue(seen["init"]["sizes_chart"])  # a job with sizes has its chart
        self.assertIsNone(seen["init"]["sizes_note"])

    def test_the_job_report_keeps_its_style_to_itself(self):
        # The report's rules (h1 at 1.4em, h2 at 1.1em) are scoped to it: the page's own heading
        # keeps the browser's 2em.
        self.assertEqual(self.browse()["job"]["font_sizes"],
                         {"main > h1": "32px", ".report h1": "22.4px", ".report h2": "17.6px"})

    def test_mpi_init_apart_from_the_wall_time_and_imbalance_by_size(self):
        init = self.browse()["init"]
        self.assertEqual(init["imbalance"], ["MPI_Send", "MPI_Allreduce", "MPI_Bcast"])
        self.assertIn("Outside the measured wall time", init["outside"])
        self.assertIn("MPI_Init 4.000 s", init["outside"])

    def test_new_only_for_routines_no_earlier_run_had(self):
        change = dict(self.browse()["newer"])
        self.assertEqual(change["MPI_Gather"], "new")
        self.assertEqual(change["MPI_Bcast"], "not in the previous run")
        self.assertEqual(change["MPI_Send"], "0.0 %")

    # ---- facts ----

    def test_job_claiming_another_user_shows_its_owner_and_the_claim(self):
        facts = self.browse()["facts"]
        uid = {n: uid_of(n) for n in (USER_A, USER_B)}
        self.assertIn(f"Owner: {USER_A} (uid {uid[USER_A]})", facts["claim"]["owner"])
        self.assertIn(f"claims another user: {USER_B} (uid {uid[USER_B]})", facts["claim"]["mismatch"])
        self.assertIn(f"Owner: {USER_A}", facts["init"]["owner"])
        self.assertIsNone(facts["init"]["mismatch"])

    def test_job_page_says_how_the_job_ended(self):
        facts = self.browse()["facts"]
        self.assertEqual(facts["abort"]["ended"], "Ended: aborted by MPI_Abort with code 2.")
        self.assertEqual(facts["signal"]["ended"], "Ended: ended by signal 11.")
        # Its record's hang section, as text (markup in it is not markup).
        self.assertEqual(facts["signal"]["hang"], "DEADLOCK: ranks 0-1 wait for each other in a "
                         "cycle:\n  rank 0 in MPI_Wait at <b>x.c</b>:9 (main)\n")
        self.assertIsNone(facts["abort"]["hang"])
        self.assertEqual(facts["exit"]["ended"], "Ended: MPI_Finalize reached on every rank, then "
                         "exit code 2 (rank 0's process).")
        # A record without the exit code: the page says it is not known, not just "finalized".
        self.assertIn("the exit code afterwards is not known", facts["init"]["ended"])

    def test_bad_number_names_its_range_as_written(self):
        error = self.browse()["bad_number"]
        self.assertIn('parameter min_mpi must be a number from 0 to 100, not "lots"', error)

    # ---- ranking by waste ----

    def test_jobs_ranked_by_mpi_core_hours_with_status_and_regression(self):
        ranked = self.browse()["ranked"]
        for name in ("MPI core-h", "Ended", "Regression"):
            self.assertIn(name, ranked["head"])
        column = {name: ranked["head"].index(name) for name in ranked["head"]}
        first = ranked["rows"][0]
        self.assertEqual(first[column["Job"]], "big:1")
        self.assertEqual(first[column["MPI core-h"]], "19")  # 0.3 x 64 ranks x 1 h
        hours = [float(r[column["MPI core-h"]]) for r in ranked["rows"]]
        self.assertEqual(hours, sorted(hours, reverse=True))
        self.assertEqual(ranked["sort"], "mpi_hours")
        ended = {r[column["Job"]]: r[column["Ended"]] for r in ranked["rare"] + ranked["abort"]}
        self.assertEqual(ended["abort:1"], "aborted")
        self.assertEqual(ended["rare:4:5"], "finalized")
        flagged = {r[column["Job"]] for r in ranked["rare"] if r[column["Regression"]] == "flagged"}
        self.assertEqual(flagged, {"rare:4:5"})

    def test_critical_jobs_led_by_the_most_mpi_core_hours(self):
        critical = self.browse()["critical"]
        self.assertEqual(critical["jobs"][0], "big:1", critical)  # not the newest tiny runs
        self.assertEqual(len(critical["hours"]), len(critical["jobs"]))
        self.assertEqual(critical["hours"], sorted(critical["hours"], reverse=True))
        self.assertIn("most MPI core-hours first", critical["title"])


if __name__ == "__main__":
    unittest.main()
