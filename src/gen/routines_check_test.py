#!/usr/bin/env python3
"""routines.py's checks of routines.txt, run on the MPI headers' dumps of the build.

Usage: routines_check_test.py XML...
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
XMLS = sys.argv[1:]


def run_routines(routines_text):
    """routines.py's exit status and error output on the given routines.txt."""
    with tempfile.TemporaryDirectory() as tmp:
        routines = os.path.join(tmp, "routines.txt")
        with open(routines, "w") as f:
            f.write(routines_text)
        args = [sys.executable, os.path.join(HERE, "routines.py"), "--roles",
                os.path.join(HERE, "roles.txt"), "--routines", routines,
                "--out", os.path.join(tmp, "table.cpp")]
        for xml in XMLS:
            args += ["--xml", xml]
        run = subprocess.run(args, capture_output=True, text=True)
        return run.returncode, run.stderr


class FrequentSection(unittest.TestCase):
    def setUp(self):
        with open(os.path.join(HERE, "routines.txt")) as f:
            self.text = f.read()

    def test_the_project_list_is_accepted(self):
        self.assertEqual(run_routines(self.text), (0, ""))

    def test_a_name_no_header_declares_is_refused(self):
        typo = self.text.replace("frequent             win_post win_start",
                                 "frequent             win_postt win_start")
        self.assertNotEqual(typo, self.text)
        status, err = run_routines(typo)
        self.assertEqual(status, 1)
        self.assertEqual(err.strip(),
                         "routines.txt: [frequent] names ['win_postt'], which no MPI header declares")

    def test_a_missing_section_is_refused(self):
        cut = self.text[:self.text.index("[frequent]")]
        status, err = run_routines(cut)
        self.assertEqual(status, 1)
        self.assertIn("no [frequent] section", err)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
