"""End-to-end tests of the conventions every `allocscope` command follows.

* `-h` and `--help` print the command's usage (which lists `-h, --help`) on stdout, exit 0.
* A file a command writes (record -o, report/diff/compare --html, export -o) is never written
  over without --force: an existing one is an error (exit 2) and stays as it was; with --force it
  is replaced.
* An export with nothing in it is an error, and leaves no file.
* Every error line starts with "allocscope: ".
* `diff` warns when the two runs are not the same workload (different arguments, or different
  programs on the same libc).
* The verdict of a profile where no call was timed never advises sampling when sampling was on.
"""
import json
import os
import subprocess
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

COMMANDS = ["record", "dump", "shapes", "callsites", "export", "report", "diff", "compare"]


def run(*args, **kw):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=600, **kw)


class Help(unittest.TestCase):
    def test_every_command_has_h_and_help(self):
        for command in COMMANDS:
            for flag in ("-h", "--help"):
                with self.subTest(command=command, flag=flag):
                    proc = run(command, flag)
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    self.assertTrue(proc.stdout.startswith(f"usage: allocscope {command}"), proc.stdout)
                    self.assertIn("-h, --help", proc.stdout)
                    self.assertEqual(proc.stderr, "")

    def test_version(self):
        proc = run("--version")
        self.assertEqual(proc.returncode, 0)
        self.assertRegex(proc.stdout, r"^allocscope \d+\.\d+\.\d+\nprofile format version \d+ ")


class Conventions(E2ETestCase):
    def harness(self, name, *args, libc="glibc", extra=()):
        path = os.path.join(self.dir, name)
        proc = run("record", *extra, "-o", path, "--", target(f"harness-{libc}"), *args)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return path

    def existing(self, name, text="precious"):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assert_refused(self, proc, path, text="precious"):
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stderr.splitlines()[0], f"allocscope: {path} already exists; not overwriting it "
                                                      "(--force overwrites it)")
        with open(path) as f:
            self.assertEqual(f.read(), text)

    def test_record_refuses_and_forces(self):
        out = self.existing("run.asp")
        argv = ["--", target("harness-glibc"), "1", "1000"]
        self.assert_refused(run("record", "-o", out, *argv), out)
        proc = run("record", "--force", "-o", out, *argv)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.dump(out)["totals"]["malloc"]["calls"], 1000)
        self.assertFalse([f for f in os.listdir(self.dir) if f.startswith("run.asp.")])
        # --force alone (no -o) is a usage error.
        proc = run("record", "--force", *argv)
        self.assertEqual(proc.returncode, 2)
        self.assertTrue(proc.stderr.startswith("allocscope: record: --force goes with -o"), proc.stderr)

    def test_pages_and_exports_refuse_and_force(self):
        a = self.harness("a.asp", "1", "2000", extra=["--trace", "--stacks"])
        b = self.harness("b.asp", "1", "2000", extra=["--trace", "--stacks"])
        cases = {
            "report": (["report", a, "--html"], "r.html"),
            "diff": (["diff", a, b, "--html"], "d.html"),
            "export folded": (["export", a, "--format", "folded", "-o"], "f.txt"),
            "export pprof": (["export", a, "--format", "pprof", "-o"], "p.pb.gz"),
            "export chrome": (["export", a, "--format", "chrome", "-o"], "c.json"),
        }
        for what, (args, name) in cases.items():
            with self.subTest(what=what):
                out = self.existing(name)
                self.assert_refused(run(*args, out), out)
                proc = run(*args, out, "--force")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                with open(out, "rb") as f:
                    self.assertNotEqual(f.read(), b"precious")

    def test_compare_refuses_before_running(self):
        out = self.existing("c.html")
        proc = run("compare", "--allocators", "glibc", "--runs", "1", "--html", out, "--",
                   target("harness-glibc"), "1", "1000")
        self.assert_refused(proc, out)
        self.assertNotIn("analyzing", proc.stderr)  # refused before the runs

    def test_nothing_to_export_is_an_error(self):
        counted = self.harness("counted.asp", "1", "1000", extra=["--sample", "0"])
        for fmt in ("folded", "pprof", "chrome"):
            with self.subTest(format=fmt):
                out = os.path.join(self.dir, f"out.{fmt}")
                proc = run("export", counted, "--format", fmt, "-o", out)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn("nothing to export", proc.stderr)
                self.assertTrue(proc.stderr.startswith(f"allocscope: {counted}: "), proc.stderr)
                self.assertFalse(os.path.exists(out))

    def test_one_error_prefix(self):
        bad = self.existing("bad.asp", "not a profile")
        cases = [["report"], ["report", "--by", "colour", bad], ["diff", bad], ["export", bad],
                 ["record"], ["dump", bad], ["report", os.path.join(self.dir, "missing.asp")],
                 ["shapes", bad], ["callsites", bad], ["compare", "--runs", "0", "true"], ["nosuchcommand"]]
        for args in cases:
            with self.subTest(args=args):
                proc = run(*args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertTrue(proc.stderr.startswith("allocscope: "), proc.stderr)

    def test_diff_warns_when_the_workloads_differ(self):
        glibc = self.harness("g1.asp", "1", "20000")
        glibc_longer = self.harness("g2.asp", "1", "30000")
        musl = self.harness("m.asp", "1", "20000", libc="musl")
        family = os.path.join(self.dir, "family.asp")
        proc = run("record", "-o", family, "--", target("alloc_family-glibc"))
        self.assertEqual(proc.returncode, 0, proc.stderr)

        proc = run("diff", glibc, glibc_longer)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("allocscope: warning: BASE and OTHER ran with different arguments ('1 20000' and "
                      "'1 30000')", proc.stderr)
        proc = run("diff", glibc, family, "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("allocscope: warning: BASE and OTHER are different programs", proc.stderr)
        self.assertTrue(json.loads(proc.stdout)["warnings"])
        # The same workload built for another libc: nothing to warn about.
        proc = run("diff", glibc, musl, "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("warning", proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["warnings"], [])

    def test_no_sampling_advice_when_sampling_was_on(self):
        # One window in 2^32 of the time: in a program this short, almost surely no call is timed.
        sparse = self.harness("sparse.asp", "1", "100", extra=["--sample", "4294967295"])
        counted = self.harness("counted.asp", "1", "100", extra=["--sample", "0"])
        j = json.loads(run("report", "--json", sparse).stdout)
        self.assertNotIn("record with sampling", j["verdict"]["text"])
        if j["timed_calls"] == 0:
            self.assertRegex(j["verdict"]["text"], r"smaller --sample|--sample 1\b")
        j = json.loads(run("report", "--json", counted).stdout)
        self.assertIn("record with sampling", j["verdict"]["text"])


if __name__ == "__main__":
    unittest.main()
