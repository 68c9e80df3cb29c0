"""The job page's communication views, fed by the store through /api/job/ID: the heat map of
every pair the store holds, the page's only one (the report it carries leaves its own out unless
the store has no pairs of the job; `strata report --format html` keeps it), zoomed into rank
ranges (a drag over cells, the form, the mouse wheel, a kind alone or the two-sided ones together,
the view kept in the page's address) with each view's bins counted here again from the record's
pairs; and the collectives by communicator with each member of the small ones as bars. One SQLite
store (the API's rows on PostgreSQL: test_web.py), one server, headless Chromium
(web_communication_browser.js). Needs root (useradd, runuser)."""
import json
import os
import sqlite3
import subprocess
import time
import unittest

from strata_testlib import STRATA
from test_site import make_record
from web_testlib import DAY, USER_A, ServedStore, create_users, remove_users

RANKS = 300
# A ring of growing messages, every tenth rank half-way round too, a second two-sided kind and
# one one-sided kind.
RING = [{"from": i, "to": (i + 1) % RANKS, "messages": i + 1, "bytes": 100 * (i + 1)}
        for i in range(RANKS)]
ACROSS = [{"from": i, "to": (i + RANKS // 2) % RANKS, "messages": 1, "bytes": 7}
          for i in range(0, RANKS, 10)]
SENDRECV = [{"from": 250, "to": 20, "messages": 2, "bytes": 64}]
PUTS = [{"from": 5, "to": 200, "messages": 3, "bytes": 999}]


def sorted_pairs(pairs):
    return sorted(pairs, key=lambda p: (p["from"], p["to"]))


# The world (too many members for a per-member list), five ranks whose rank 0 sends most, four
# pairs of ranks, two that only meet in barriers, and collectives on an intercommunicator.
COLLECTIVES = {
    "communicators": [
        {"members": f"0-{RANKS - 1}", "size": RANKS, "members_reported": RANKS, "calls": 6000,
         "bytes": 3_000_000, "calls_min": 20, "calls_max": 20,
         "bytes_per_member": {"min": 8000, "mean": 10000.0, "max": 608000, "min_rank": 1,
                              "max_rank": 0}},
        {"members": "0-4", "size": 5, "members_reported": 5, "calls": 50, "bytes": 2000,
         "calls_min": 10, "calls_max": 10,
         "bytes_per_member": {"min": 100, "mean": 400.0, "max": 1200, "min_rank": 1,
                              "max_rank": 0},
         "per_member": [{"rank": 0, "calls": 10, "bytes": 1200},
                        {"rank": 1, "calls": 10, "bytes": 100},
                        {"rank": 2, "calls": 10, "bytes": 200},
                        {"rank": 3, "calls": 10, "bytes": 300},
                        {"rank": 4, "calls": 10, "bytes": 200}]},
        *[{"members": f"{a}-{a + 1}", "size": 2, "members_reported": 2, "calls": 2,
           "bytes": 40 - a, "calls_min": 1, "calls_max": 1,
           "bytes_per_member": {"min": 0, "mean": (40 - a) / 2, "max": 40 - a, "min_rank": a + 1,
                                "max_rank": a},
           "per_member": [{"rank": a, "calls": 1, "bytes": 40 - a},
                          {"rank": a + 1, "calls": 1, "bytes": 0}]} for a in (10, 12, 14, 16)],
        {"members": "5-6", "size": 2, "members_reported": 2, "calls": 4, "bytes": 0,
         "calls_min": 2, "calls_max": 2,
         "bytes_per_member": {"min": 0, "mean": 0.0, "max": 0, "min_rank": 5, "max_rank": 5},
         "per_member": [{"rank": 5, "calls": 2, "bytes": 0}, {"rank": 6, "calls": 2, "bytes": 0}]}],
    "unattributed": {"calls": 8, "bytes": 64}}


def setUpModule():
    create_users()


def tearDownModule():
    remove_users()


def comm_record(job_id, uid_a, now):
    rec = make_record(job_id, USER_A, uid_a, RANKS, 100.0,
                      {"MPI_Sendrecv": (600, 30.0, 45150), "MPI_Allreduce": (6000, 10.0, 3000000)},
                      now - DAY, executable="/home/a/ring")
    p2p = sorted_pairs(RING + ACROSS)
    rec["communication"] = {"pairs": sorted_pairs(p2p + SENDRECV),
                            "by_kind": {"point_to_point": p2p, "sendrecv": SENDRECV, "put": PUTS},
                            "collectives": COLLECTIVES}
    return rec


def records(uid_a, uid_b, now):
    """The job, and the same again as a store made before it kept pairs holds it (setUpClass
    deletes its pairs)."""
    return {"comm.json": (comm_record("comm:300", uid_a, now), uid_a),
            "old.json": (comm_record("old:300", uid_a, now - 60), uid_a)}


def bin_ranges(first, last, cells=64):
    """The bins of the ranks first..last as the page makes them: equal groups, at most 64."""
    group = -(-(last - first + 1) // cells)
    return group, [(a, min(last, a + group - 1)) for a in range(first, last + 1, group)]


def rank_range(first, last):
    return f"rank {first}" if first == last else f"ranks {first}-{last}"


def expected_cells(rows, cols, pairs):
    """The title of each cell the page draws for the view, counted from the record's pairs."""
    row_group, row_bins = bin_ranges(*rows)
    col_group, col_bins = bin_ranges(*cols)
    grouped = row_group > 1 or col_group > 1
    cells = {}
    for p in pairs:
        if rows[0] <= p["from"] <= rows[1] and cols[0] <= p["to"] <= cols[1]:
            key = ((p["from"] - rows[0]) // row_group, (p["to"] - cols[0]) // col_group)
            c = cells.setdefault(key, [0, 0, set()])
            c[0] += p["bytes"]
            c[1] += p["messages"]
            c[2].add((p["from"], p["to"]))
    out = []
    for (r, c), (nbytes, messages, distinct) in cells.items():
        n = len(distinct)
        extra = f" ({n} pair{'' if n == 1 else 's'})" if grouped else ""
        out.append(f"{rank_range(*row_bins[r])} to {rank_range(*col_bins[c])}: {nbytes} bytes in "
                   f"{messages} messages{extra}")
    return sorted(out)


TWO_SIDED = RING + ACROSS + SENDRECV
ALL = TWO_SIDED + PUTS


class WebCommunicationTest(ServedStore, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.serve_records("strata-web-comm-", records)
        with sqlite3.connect(cls.url[len("sqlite:"):]) as db:
            db.execute("DELETE FROM job_pairs WHERE job_id = ?", (cls.jobs["old:300"]["id"],))
        # The standalone report of the same record, which has no page around it.
        record = os.path.join(cls.tmp, "comm.json")
        with open(record, "w") as f:
            json.dump(comm_record("comm:300", 1000, int(time.time())), f)
        cls.report = os.path.join(cls.tmp, "report.html")
        with open(cls.report, "w") as f:
            subprocess.run([STRATA, "report", "--format", "html", record], stdout=f, check=True)

    def browse(self):
        return self.browse_once("web_communication_browser.js", {
            "base": self.base, "token": self.tokens[USER_A], "report": self.report,
            "jobs": {k: j["id"] for k, j in self.jobs.items()}})

    def test_one_heat_map_on_the_job_page_the_reports_elsewhere(self):
        maps = self.browse()["maps"]
        # The job page: its own heat map alone, the report it carries without one.
        self.assertEqual(maps["job"]["maps"], ["zoomable-heatmap"])
        self.assertEqual(maps["job"]["report_maps"], 0)
        self.assertIn("Point-to-point pairs by bytes", maps["job"]["report_headings"])
        # A job whose pairs the store does not hold (stored before it kept them): the report's.
        self.assertEqual(maps["old_job"]["maps"], ["heatmap"])
        self.assertEqual(maps["old_job"]["report_maps"], 1)
        # `strata report --format html` alone: its heat map of the two-sided pairs.
        self.assertEqual(maps["standalone"]["maps"], ["heatmap"])
        self.assertEqual(maps["standalone"]["cells"],  # 300 ranks: 2 x 2 ranks a cell
                         len({(p["from"] // 2, p["to"] // 2) for p in TWO_SIDED}))

    def test_api_gives_every_pair_and_the_collectives_from_the_store(self):
        job = self.api_as(USER_A, f"/api/job/{self.jobs['comm:300']['id']}")
        m = job["partners"]["matrix"]
        kinds = m["kinds"]
        got = sorted((m["from"][i], m["to"][i], kinds[m["kind"][i]], m["messages"][i], m["bytes"][i])
                     for i in range(len(m["from"])))
        want = sorted([(p["from"], p["to"], "point_to_point", p["messages"], p["bytes"])
                       for p in RING + ACROSS] + [(250, 20, "sendrecv", 2, 64), (5, 200, "put", 3, 999)])
        self.assertEqual(got, want)
        self.assertEqual(dict(zip(kinds, m["one_sided"])),
                         {"point_to_point": False, "put": True, "sendrecv": False})
        c = job["collectives"]
        self.assertEqual([x["members"] for x in c["communicators"]],
                         ["0-299", "0-4", "10-11", "12-13", "14-15", "16-17", "5-6"])
        world, five, pair = c["communicators"][0], c["communicators"][1], c["communicators"][-1]
        self.assertEqual(world["per_member"], [])
        self.assertAlmostEqual(world["imbalance"], 60.8)
        self.assertEqual(five["bytes_per_member"]["max_rank"], 0)
        self.assertAlmostEqual(five["imbalance"], 3.0)
        self.assertEqual([m["bytes"] for m in five["per_member"]], [1200, 100, 200, 300, 200])
        self.assertIsNone(pair["imbalance"])  # barriers only: no bytes to balance
        self.assertEqual(c["unattributed"], {"calls": 8, "bytes": 64})
        self.assertNotIn("unlisted", c)

    def test_heat_map_bins_the_whole_job(self):
        seen = self.browse()["heat"]
        whole = seen["whole"]
        self.assertEqual(sorted(whole["cells"]), expected_cells((0, RANKS - 1), (0, RANKS - 1), ALL))
        _, bins = bin_ranges(0, RANKS - 1)
        self.assertEqual(len(bins), 60)  # 5 ranks a cell
        self.assertEqual(whole["row_labels"][:2], ["0-4", "20-24"])  # every fourth bin labelled
        self.assertEqual(whole["row_labels"][-2:], ["280-284", "295-299"])  # and the last one
        self.assertEqual(whole["col_labels"][-1], "295-299")
        self.assertIn("Hover a cell for its figures.", whole["caption"])
        self.assertEqual(whole["form"], ["0", "299", "0", "299"])
        self.assertIn("ranks 0-299 (rows, 5 ranks a cell, 60 cells)", whole["caption"])
        self.assertEqual(whole["svgs"], 1)

    def test_drag_zooms_into_the_ranks_selected(self):
        seen = self.browse()["heat"]
        # Dragged from the cell of ranks 100-104 to 105-109 to that of 135-139 to 140-144.
        drag = seen["drag"]
        self.assertEqual(drag["form"], ["100", "139", "105", "144"])
        self.assertEqual(sorted(drag["cells"]), expected_cells((100, 139), (105, 144), ALL))
        self.assertEqual(len(drag["cells"]), 36)  # 104 -> 105 to 139 -> 140, one pair a cell
        self.assertEqual(drag["row_labels"][0], "100")
        self.assertEqual(drag["col_labels"][0], "105")
        self.assertEqual(drag["row_labels"][-1], "139")  # 40 bins, every third labelled
        self.assertIn("ranks 100-139 (rows, one rank a cell)", drag["caption"])
        self.assertTrue(drag["url"].endswith("?senders=100-139&receivers=105-144"), drag["url"])
        # The link of the view restores it.
        self.assertEqual(seen["restored"]["form"], ["100", "139", "105", "144"])
        self.assertEqual(sorted(seen["restored"]["cells"]), sorted(drag["cells"]))

    def test_click_zooms_into_the_cells_ranks(self):
        click = self.browse()["heat"]["click"]  # the whole job's cell of 100-104 to 105-109
        self.assertEqual(click["form"], ["100", "104", "105", "109"])
        self.assertEqual(sorted(click["cells"]), expected_cells((100, 104), (105, 109), ALL))
        self.assertTrue(click["cells"])  # rank 104 sends to 105 (the ring)
        self.assertTrue(click["url"].endswith("?senders=100-104&receivers=105-109"), click["url"])

    def test_form_wheel_kind_and_whole_job(self):
        seen = self.browse()["heat"]
        typed = seen["typed"]  # ranks 0-9 to 145-160: the ring's start and rank 0's partner
        self.assertEqual(sorted(typed["cells"]), expected_cells((0, 9), (145, 160), ALL))
        self.assertEqual(typed["cells"], ["rank 0 to rank 150: 7 bytes in 1 messages"])
        # The wheel over the whole job: half the ranks a side, around the cell under the pointer.
        wheel = seen["wheel"]
        first, last, cfirst, clast = map(int, wheel["form"])
        self.assertEqual((last - first + 1, clast - cfirst + 1), (150, 150))
        self.assertLessEqual(first, 52)
        self.assertGreaterEqual(last, 52)
        self.assertEqual(sorted(wheel["cells"]), expected_cells((first, last), (cfirst, clast), ALL))
        out = seen["zoomed_out"]  # back out: twice the span
        self.assertEqual(int(out["form"][1]) - int(out["form"][0]) + 1, 300)
        puts = seen["put_only"]
        self.assertEqual(puts["cells"], ["ranks 5-9 to ranks 200-204: 999 bytes in 3 messages (1 pair)"])
        self.assertIn("put only", puts["caption"])
        # The two-sided kinds together, as the report's heat map summed them.
        self.assertEqual(sorted(seen["two_sided"]["cells"]),
                         expected_cells((0, RANKS - 1), (0, RANKS - 1), TWO_SIDED))
        self.assertIn("two-sided kinds only", seen["two_sided"]["caption"])
        self.assertEqual(seen["kinds"], ["every kind", "every two-sided kind", "point to point",
                                         "put", "sendrecv"])
        self.assertEqual(seen["back_to_whole"]["form"], ["0", "299", "0", "299"])
        self.assertNotIn("senders=", seen["back_to_whole"]["url"])

    def test_collectives_by_communicator_with_bars_per_member(self):
        seen = self.browse()["collectives"]
        rows = seen["rows"]
        self.assertEqual(len(rows), 7)
        self.assertEqual(rows[:3], [
            ["0-299", "300", "20", "6000", "3000000", "8000 / 10000.0 / 608000", "0", "60.80"],
            ["0-4", "5", "10", "50", "2000", "100 / 400.0 / 1200", "0", "3.00"],
            ["10-11", "2", "1", "2", "30", "0 / 15.0 / 30", "10", "2.00"]])
        self.assertEqual(rows[-1], ["5-6", "2", "2", "4", "0", "0 / 0.0 / 0", "5", "-"])
        self.assertIn("on intercommunicators or communicators not known: 8 calls, 64 bytes",
                      seen["elsewhere"])
        # The world has no per-member list; the five heaviest of the others are drawn, the last
        # when asked for.
        self.assertEqual(seen["bar_tables"], ["0-4", "10-11", "12-13", "14-15", "16-17"])
        self.assertEqual(seen["more"], "Members of 1 more communicator")
        self.assertEqual(seen["bar_tables_all"], seen["bar_tables"] + ["5-6"])
        bars = seen["bars"]  # rank, calls, bytes; the bar's width against rank 0's 1200 bytes
        self.assertEqual([b[:3] for b in bars], [["0", "10", "1200"], ["1", "10", "100"],
                                                ["2", "10", "200"], ["3", "10", "300"],
                                                ["4", "10", "200"]])
        widths = [b[3] for b in bars]
        for w, nbytes in zip(widths, (1200, 100, 200, 300, 200)):
            self.assertAlmostEqual(w / widths[0], nbytes / 1200, delta=0.02)
        self.assertEqual(seen["bar_title"], "rank 3: 300 bytes in 10 calls")


if __name__ == "__main__":
    unittest.main()
