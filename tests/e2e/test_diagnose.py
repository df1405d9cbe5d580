"""scripts/diagnose, the README's first command after the build: the stress harness under glibc's
malloc and under musl's, recorded, reported and compared.

One run, smaller than the default (4 threads x 150,000 iterations: more threads than the CPUs of
the machines this runs on, as the default's 8 are), and its claims checked as a user reads them:
both reports and the diff are printed; musl's malloc, which takes one lock on every malloc, is
called `global_lock` or `unsure` (never `none` or `partial`); glibc's, which has none, is never
called `global_lock`; the diff puts musl's extra time inside the allocator.
"""
import json
import os
import subprocess
import unittest

from allocscope_e2e import BUILD, CLI, E2ETestCase

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Diagnose(E2ETestCase):
    def test_diagnose_records_reports_and_compares(self):
        env = dict(os.environ, ALLOCSCOPE_BUILD=BUILD, ALLOCSCOPE_DEMO_DIR=self.dir)
        proc = subprocess.run([os.path.join(REPO, "scripts", "diagnose"), "4", "150000"], capture_output=True,
                              text=True, env=env, timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for heading in ("== glibc malloc ==", "== musl malloc ==", "== musl against glibc =="):
            self.assertIn(heading, proc.stdout)
        self.assertEqual(proc.stdout.count("Verdict\n"), 2, proc.stdout)

        def report(name):
            path = os.path.join(self.dir, name)
            out = subprocess.run([CLI, "report", "--json", path], capture_output=True, text=True, timeout=600)
            self.assertEqual(out.returncode, 0, out.stderr)
            return json.loads(out.stdout)

        glibc, musl = report("harness-glibc.asp"), report("harness-musl.asp")
        # The demonstration times 1/8 of the run (its comment says why).
        self.assertEqual(musl["sample_every"], 8)
        self.assertNotEqual(glibc["contention"]["verdict"], "global_lock", glibc["contention"]["reason"])
        self.assertIn(musl["contention"]["verdict"], ("global_lock", "unsure"), musl["contention"]["reason"])
        # The text says what the JSON says.
        self.assertIn(f"verdict: {musl['contention']['verdict']}", proc.stdout)
        diff = json.loads(subprocess.run([CLI, "diff", "--json", os.path.join(self.dir, "harness-glibc.asp"),
                                          os.path.join(self.dir, "harness-musl.asp")],
                                         capture_output=True, text=True, timeout=600, check=True).stdout)
        self.assertGreater(diff["measured_delta_ns"], 0)
        self.assertGreater(diff["attributed_delta_ns"], 0)


if __name__ == "__main__":
    unittest.main()
