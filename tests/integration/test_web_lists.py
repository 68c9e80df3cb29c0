"""The web's lists beside the jobs list: jobs, users and programs ranked by wasted MPI time with
the reason per job; the flagged jobs and regressions; drill-down from the site page to a user,
a program and a job; any two runs of a program compared; a period picker on every list page and
a CSV of every table. One SQLite store of hand-made records whose waste is known, one server,
headless Chromium (web_lists_browser.js). Needs root (useradd, runuser)."""
import csv
import io
import unittest

from test_site import make_record
from web_testlib import ADMIN, DAY, USER_A, USER_B, ServedStore, create_users, remove_users

SOLVER = "/home/a/solver"


def setUpModule():
    create_users()


def tearDownModule():
    remove_users()


def even(rec):
    """Every rank spent the same time in each routine and called it as often."""
    ranks = rec["job"]["ranks"]
    for r in rec["routines"].values():
        t, c = r["time_s"] / ranks, r["calls"] / ranks
        r["per_rank"] = {"calls": {"min": c, "mean": c, "max": c, "max_rank": 0},
                         "time_s": {"min": t, "mean": t, "max": t, "max_rank": 0}}
    return rec


def slurm(account):
    """A record's Slurm facts: a job of `account` in the partition "compute"."""
    return {"job_id": "81234", "step": "0", "cluster": "hpc", "user": "", "account": account,
            "partition": "compute", "qos": "", "nodes": 1, "node_list": "n1",
            "tasks_per_node": "4", "ended_by_time_limit": False}


def records(uid_a, uid_b, now):
    """{file name: (record, owner uid)}."""
    out = {}
    # Rank 3 spent 25 s in MPI_Wait, the least busy rank 1 s: 40 - 4 x 1 = 36 s of waiting,
    # 75 % of the job's 48 s of MPI time; rank 0 sent rank 3 the most.
    wait = even(make_record("wait:1", USER_A, uid_a, 4, 100.0, {
        "MPI_Wait": (400, 40.0, 0), "MPI_Allreduce": (40, 8.0, 320)}, now - DAY, executable="/home/a/wait"))
    wait["routines"]["MPI_Wait"]["per_rank"]["time_s"] = {"min": 1.0, "mean": 10.0, "max": 25.0,
                                                         "max_rank": 3}
    wait["routines"]["MPI_Allreduce"]["size_histogram"] = [[8, 40]]  # every message small
    pairs = [{"from": 0, "to": 3, "messages": 10, "bytes": 1000},
             {"from": 1, "to": 3, "messages": 1, "bytes": 10}]
    wait["communication"] = {"pairs": pairs, "by_kind": {"point_to_point": pairs}}
    wait["job"]["slurm"] = slurm("chem")
    wait["job"]["exit_code"] = 2  # finalized, then exited with 2
    out["wait.json"] = (wait, uid_a)
    # B's job measured by the overhead module: 30 s over the machine model at one call site.
    model = even(make_record("model:1", USER_B, uid_b, 4, 100.0, {"MPI_Recv": (40, 60.0, 400)},
                             now - DAY, executable="/home/b/model"))
    model["job"]["module"] = "overhead"
    model["callsites"] = [{"function": "MPI_Recv", "file": "/src/solver.c", "line": 311,
                           "caller": "exchange", "calls": 40, "time_s": 50.0, "bytes": 400,
                           "wasted_s": 30.0, "ranks": 4}]
    model["callsites_dropped"] = 0
    model["job"]["slurm"] = slurm("phys")
    model["job"]["exit_code"] = 0  # a clean exit: 0, not the empty cell of not known
    out["model.json"] = (model, uid_b)
    # The most MPI time of all, evenly spread: no waste (and critical: MPI is 67 % of its time).
    out["even.json"] = (even(make_record("even:1", USER_A, uid_a, 2, 150.0, {
        "MPI_Allreduce": (100, 200.0, 800)}, now - 2 * DAY, executable="/home/a/even")), uid_a)
    # Only rank 0 sends: the others never waited in MPI_Send (critical: MPI 20 %).
    master = even(make_record("master:1", USER_A, uid_a, 2, 50.0, {"MPI_Send": (10, 20.0, 80)},
                              now - 2 * DAY, executable="/home/a/master"))
    master["routines"]["MPI_Send"]["per_rank"]["calls"]["min"] = 0
    master["routines"]["MPI_Send"]["per_rank"]["time_s"]["min"] = 0
    out["master.json"] = (master, uid_a)
    # Six runs of a program at 4 ranks, the last 60 % slower in MPI_Allreduce: flagged.
    for n in range(6):
        jitter = 1 + 0.005 * ((n * 37 + 4) % 5 - 2)
        t = 0.09 * jitter * (1.6 if n == 5 else 1.0)
        rec = make_record(f"solver:{n}", USER_A, uid_a, 4, 2.0 * jitter + t,
                          {"MPI_Allreduce": (200, t * 4, 1600)}, now - 3 * DAY + n * 600,
                          executable=SOLVER)
        rec["job"]["argv"] = [SOLVER]
        out[f"solver-{n}.json"] = (even(rec), uid_a)
    # Long ago: outside a 7-day period.
    out["old.json"] = (even(make_record("old:1", USER_A, uid_a, 2, 10.0, {"MPI_Send": (2, 1.0, 8)},
                                        now - 40 * DAY, executable="/home/a/old")), uid_a)
    return out


class WebListsTest(ServedStore, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.serve_records("strata-web-lists-", records)

    def browse(self):
        """What web_lists_browser.js saw: one visit for every test that asks."""
        return self.browse_jobs_once("web_lists_browser.js")

    # ---- why, on the job page ----

    def test_job_page_says_why_with_what_to_try_and_the_tool(self):
        why = {j: self.api_as(ADMIN, f"/api/job/{self.jobs[j]['id']}")["why"]
               for j in ("wait:1", "model:1")}
        wait = {f["kind"]: f for f in why["wait:1"]}
        self.assertEqual(list(wait), ["where", "imbalance", "model", "messages"])
        self.assertEqual(wait["where"]["text"], "MPI_Wait takes 83 % of the MPI time (10 s per rank).")
        self.assertEqual(wait["imbalance"]["text"],
                         "Ranks wait for each other: 75 % of the MPI time is time beyond the least "
                         "busy rank's, most in MPI_Wait (rank 3 spent 25 s in it, the least busy "
                         "rank 1 s).")
        self.assertIn("overhead module did not run", wait["model"]["text"])
        self.assertEqual(wait["model"]["tool"], "overhead")
        self.assertIn("100 % of the 40 messages carry less than 1 KiB", wait["messages"]["text"])
        for f in why["wait:1"]:
            self.assertTrue(f["next"] and f["how"].startswith("strata "), f)
        model = {f["kind"]: f for f in why["model:1"]}
        self.assertIn("the call site that takes most is MPI_Recv at solver.c:311 in exchange",
                      model["where"]["text"])
        self.assertEqual(model["model"]["text"],
                         "50 % of the MPI time is over what the machine model says the calls "
                         "should cost, most at solver.c:311 in MPI_Recv (30 s over it).")
        self.assertNotIn("imbalance", model)  # every rank spent the same time
        seen = self.browse()["why"]
        self.assertEqual([k for k, _, _ in seen], ["where", "imbalance", "model", "messages"])
        self.assertTrue(all("Try: " in text for _, text, _ in seen))
        self.assertEqual([t for _, _, t in seen], ["trace", "trace", "overhead", "trace"])

    # ---- PNG of every chart, links that restore a view ----

    def test_charts_download_as_png(self):
        png = self.browse()["png"]
        self.assertEqual(sorted(png["links"]), ["imbalance", "sizes"])
        self.assertEqual(png["name"], "imbalance.png")
        self.assertEqual(png["signature"], [137, 80, 78, 71, 13, 10, 26, 10])
        self.assertGreater(png["size"], 1000)
        self.assertGreater(png["width"], 100)

    def test_a_views_link_restores_it(self):
        shared = self.browse()["shared"]
        form = dict(shared["form"])
        self.assertEqual((form["q"], form["sort"], form["days"], form["min_ranks"]),
                         ("solver", "mpi_hours", "7", "4"))
        ids = [r[0] for r in shared["rows"]]
        self.assertEqual(sorted(ids), [f"solver:{n}" for n in range(6)])
        self.assertEqual(ids[0], "solver:5")  # the most MPI core-hours first

    # ---- Slurm's accounts and partitions on the site page ----

    def test_site_page_groups_by_slurm_account_and_partition(self):
        site = self.api_as(ADMIN, "/api/site")
        accounts = {g["label"]: g["jobs"] for g in site["by_account"]}
        self.assertEqual(accounts, {"chem": 1, "phys": 1, "": site["totals"]["jobs"] - 2})
        self.assertEqual({g["label"] for g in site["by_partition"]}, {"compute", ""})
        seen = self.browse()["slurm"]
        self.assertEqual(sorted(r[0] for r in seen["accounts"]),
                         ["(none: not started by Slurm)", "chem", "phys"])
        self.assertEqual(sorted(r[0] for r in seen["partitions"]),
                         ["(none: not started by Slurm)", "compute"])
        self.assertEqual(sum(int(r[1]) for r in seen["accounts"]), site["totals"]["jobs"])

    def test_site_pages_accounts_and_partitions_lead_to_their_jobs(self):
        drill = self.browse()["slurm_drill"]
        self.assertEqual(sorted(drill["account_links"]),
                         ["/jobs?account=chem&days=28", "/jobs?account=phys&days=28"])
        self.assertEqual(drill["partition_links"], ["/jobs?partition=compute&days=28"])
        self.assertEqual(drill["url"], "/jobs?account=chem&days=28")
        self.assertEqual(drill["form"]["account"], "chem")  # the link restores the filter
        self.assertEqual(drill["form"]["days"], "28")
        self.assertEqual([r[0] for r in drill["rows"]], ["wait:1"])
        self.assertEqual(sorted(r[0] for r in drill["partition_rows"]), ["model:1", "wait:1"])
        # The API's filters, one and both.
        ids = lambda q: sorted(j["record_id"] for j in self.api_as(ADMIN, "/api/jobs?" + q)["jobs"])
        self.assertEqual(ids("account=phys"), ["model:1"])
        self.assertEqual(ids("account=chem&partition=compute"), ["wait:1"])
        self.assertEqual(ids("account=chem&partition=other"), [])
        self.assertEqual(ids(f"account=phys&user={USER_A}"), [])  # B's job

    # ---- the exit code in the jobs list ----

    def test_jobs_list_shows_sorts_and_filters_the_exit_code(self):
        listed = self.api_as(ADMIN, "/api/jobs?sort=exit&per_page=500")["jobs"]
        codes = [(j["record_id"], j["exit_code"]) for j in listed]
        self.assertEqual(codes[:2], [("wait:1", 2), ("model:1", 0)])
        self.assertEqual({c for _, c in codes[2:]}, {None})  # not known: null, never 0
        self.assertEqual(len(codes), len(self.jobs))
        failed = self.api_as(ADMIN, "/api/jobs?exit=nonzero")["jobs"]
        self.assertEqual([j["record_id"] for j in failed], ["wait:1"])
        status, body, _ = self.request("/api/jobs?exit=1", self.tokens[USER_A])
        self.assertEqual(status, 400, body)
        self.assertIn("parameter exit must be nonzero", body)
        seen = self.browse()["exit"]
        self.assertEqual(seen["head"][-2], "Exit")
        self.assertEqual([r[0] for r in seen["rows"][:2]], ["wait:1", "model:1"])
        self.assertEqual([r[1] for r in seen["rows"][:2]], ["2", "0"])
        self.assertEqual(seen["rows"][2][1], "")  # empty, with the reason in its title
        self.assertIn("exit code not known", seen["rows"][2][2])
        self.assertEqual(seen["sort"], "exit")
        self.assertEqual(seen["failed_rows"], ["wait:1"])
        self.assertEqual(seen["failed_form"], "nonzero")

    # ---- copy link ----

    def test_copy_link_puts_the_views_address_on_the_clipboard(self):
        copied = self.browse()["copied"]
        self.assertEqual(copied["jobs"]["clipboard"], copied["jobs"]["url"])
        self.assertTrue(copied["jobs"]["url"].endswith("/jobs?account=chem&days=28"), copied)
        self.assertEqual(copied["jobs"]["note"], "Copied: " + copied["jobs"]["url"])
        self.assertEqual(copied["job"]["clipboard"], copied["job"]["url"])
        self.assertTrue(copied["job"]["url"].endswith(f"/job/{self.jobs['wait:1']['id']}"), copied)
        self.assertEqual(copied["job"]["note"], "Copied: " + copied["job"]["url"])

    # ---- waste ----

    def test_jobs_ranked_by_waste_with_the_reason(self):
        r = self.api_as(USER_A, "/api/waste")
        self.assertTrue(r["complete"])
        ranked = [(j["record_id"], round(j["wasted_s"], 6)) for j in r["jobs"]]
        self.assertEqual(ranked[0], ("wait:1", 36.0))
        self.assertNotIn("model:1", [j for j, _ in ranked])  # B's job
        self.assertNotIn("old:1", [j for j, _ in ranked])  # outside the 28 days
        waste = {j["record_id"]: j for j in r["jobs"]}
        self.assertEqual(waste["wait:1"]["why"],
                         "75% of MPI time is ranks waiting in MPI_Wait: rank 3 spent 25 s in it, "
                         "the least busy rank 1 s; rank 3 receives most from rank 0.")
        self.assertEqual(waste["even:1"]["wasted_s"], 0)  # the most MPI time, none lost
        self.assertEqual(waste["master:1"]["wasted_s"], 0)  # only rank 0 sends
        everyone = self.api_as(ADMIN, "/api/waste")
        self.assertEqual([j["record_id"] for j in everyone["jobs"][:2]], ["wait:1", "model:1"])
        model = everyone["jobs"][1]
        self.assertEqual(model["waste_basis"], "model")
        self.assertEqual(model["wasted_s"], 30.0)
        self.assertEqual(model["why"], "50% of MPI time is over what the machine model says the "
                         "calls cost, most in MPI_Recv at solver.c:311 (30 s over it).")
        self.assertEqual([(u["owner"], u["wasted_s"]) for u in everyone["users"]][1], (USER_B, 30.0))
        self.assertEqual(everyone["users"][0]["owner"], USER_A)
        self.assertEqual(everyone["programs"][0]["executable"], "/home/a/wait")
        self.assertEqual(len(self.api_as(ADMIN, "/api/waste?days=365")["jobs"]), len(self.jobs))
        status, body, _ = self.request(f"/api/waste?user={USER_B}", self.tokens[USER_A])
        self.assertEqual(status, 403, body)

    def test_waste_page_as_a_user_and_its_csv(self):
        seen = self.browse()["waste"]
        self.assertEqual(seen["jobs"][0][0], "wait:1")
        self.assertIn("rank 3 receives most from rank 0", seen["jobs"][0][-1])
        self.assertEqual(seen["users"], None)  # a user sees no users table
        self.assertTrue(seen["programs"][0][0].startswith("/home/a/wait "), seen["programs"])
        self.assertEqual(seen["period"], "28")
        self.assertEqual(seen["csv_name"], "jobs-by-waste.csv")
        rows = list(csv.reader(io.StringIO(seen["csv"])))
        self.assertEqual(rows[0][:2], ["Job", "User"])
        self.assertEqual(rows[1][0], "wait:1")
        self.assertEqual(len(rows), len(seen["jobs"]) + 1)

    # ---- flagged jobs and regressions ----

    def test_flagged_page_lists_regressions_and_critical_jobs(self):
        seen = self.browse()["flagged"]
        self.assertEqual([r[0] for r in seen["regressions"]], ["solver:5"])
        self.assertIn("MPI_Allreduce", seen["regressions"][0][-1])
        self.assertEqual([r[0] for r in seen["critical"]], ["even:1", "master:1"])
        self.assertIn("MPI over 15 % of CPU time", seen["critical_title"])
        r = self.api_as(ADMIN, "/api/regressions")
        self.assertEqual(r["count"], 1)
        self.assertEqual(self.api_as(USER_B, "/api/regressions")["count"], 0)

    # ---- navigation ----

    def test_period_picker_on_every_list_page(self):
        seen = self.browse()["periods"]
        self.assertEqual(seen, {"jobs": "", "jobs7": "7", "waste": "28", "waste7": "7",
                                "flagged": "28", "site": "28"})
        seven = self.browse()["waste7"]
        self.assertNotIn("old:1", seven)
        self.assertIn("wait:1", seven)

    def test_drill_down_from_the_site_to_a_user_a_program_and_a_job(self):
        seen = self.browse()["drill"]
        self.assertEqual(seen["user_url"], f"/waste?user={USER_A}&days=28")
        self.assertTrue(seen["program_url"].startswith(f"/jobs?user={USER_A}&q=%2Fhome%2Fa%2Fwait"),
                        seen)
        self.assertEqual(seen["job_title"], "Job wait:1")

    def test_any_two_runs_compared_side_by_side(self):
        seen = self.browse()["compare"]
        self.assertEqual(len(seen["choices"]), 5)  # the program's other runs
        self.assertTrue(seen["url"].startswith("/compare?a="), seen)
        rows = {r[0]: r for r in seen["rows"]}
        self.assertEqual(rows["Job"][1:3], ["solver:5", "solver:0"])
        allreduce = rows["MPI_Allreduce s per rank"]
        self.assertTrue(allreduce[3].startswith("-"), allreduce)  # solver:0 is faster
        self.assertIn("MPI_Allreduce s per rank", seen["highlighted"])
        # The job page asks for the newest runs of each size only.
        program = self.api_as(USER_A, f"/api/job/{self.jobs['solver:5']['id']}")["program_id"]
        history = self.api_as(USER_A, f"/api/user/history?program={program}&newest=2")
        self.assertEqual([[r["job_id"] for r in s["runs"]] for s in history["sizes"]],
                         [[self.jobs["solver:4"]["id"], self.jobs["solver:5"]["id"]]])
        self.assertEqual(history["sizes"][0]["all_runs"], 6)  # the trends page says it cut


    # ---- the communication matrix ----

    def test_job_page_shows_the_communication_heat_map_once(self):
        seen = self.browse()["heat_map"]
        self.assertEqual(seen["maps"], ["zoomable-heatmap"])  # the report's is left out
        self.assertEqual(seen["report_maps"], 0)
        self.assertEqual(seen["cells"], ["rank 0 to rank 3: 1000 bytes in 10 messages",
                                         "rank 1 to rank 3: 10 bytes in 1 messages"])
        self.assertIn("one rank a cell", seen["caption"])
        self.assertIn("Hover a cell for its figures", seen["caption"])
        self.assertGreater(seen["width"], 100)


if __name__ == "__main__":
    unittest.main()
