"""End-to-end tests of the installed allocscope: `cmake --install` to a prefix and the `.deb` CPack builds.

A packager installs the build to a prefix (or builds the Debian package) and runs the installed
`allocscope` from there, far from the build tree: `record` must find the shim under
<prefix>/lib/allocscope, and record glibc and musl programs alike.  The man pages and the
documentation are installed beside it, and `--version` names the profile format.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from allocscope_e2e import BUILD, target

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COMMANDS = ["record", "dump", "shapes", "callsites", "export", "report", "diff", "compare"]


def clean_env():
    env = dict(os.environ)
    env.pop("ALLOCSCOPE_SHIM", None)
    env.pop("LD_PRELOAD", None)
    return env


class InstalledTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="allocscope-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        proc = subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise AssertionError(f"cmake --install failed: {proc.stdout}{proc.stderr}")
        cls.cli = os.path.join(cls.prefix, "bin", "allocscope")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_cli(self, args, **kw):
        return subprocess.run([self.cli] + args, capture_output=True, text=True, env=clean_env(),
                              cwd=self.tmp, **kw)

    def test_layout(self):
        self.assertTrue(os.access(self.cli, os.X_OK))
        self.assertTrue(os.path.isfile(os.path.join(self.prefix, "lib", "allocscope", "liballocscope.so")))
        for probe in ("allocscope-lockprobe-glibc", "allocscope-lockprobe-musl"):
            self.assertTrue(os.access(os.path.join(self.prefix, "lib", "allocscope", probe), os.X_OK), probe)
        docs = os.path.join(self.prefix, "share", "doc", "allocscope")
        for doc in ["README.md", "docs/analysis.md", "docs/recording.md", "docs/shapes.md", "docs/compare.md"]:
            self.assertTrue(os.path.isfile(os.path.join(docs, doc)), doc)

    def test_man_page_per_command(self):
        man = os.path.join(self.prefix, "share", "man", "man1")
        for name in ["allocscope"] + [f"allocscope-{c}" for c in COMMANDS]:
            path = os.path.join(man, f"{name}.1.gz")
            self.assertTrue(os.path.isfile(path), path)
            with gzip.open(path, "rt") as f:
                text = f.read()
            self.assertTrue(text.startswith(f".TH {name.upper()} 1"), name)
            self.assertIn(".SH NAME", text)
            if name != "allocscope":
                command = name.split("-", 1)[1]
                # The page holds the command's help text: its usage line, and its options.
                self.assertIn(f"usage: allocscope {command}", text)
                self.assertIn("\\-h, \\-\\-help", text)
        if shutil.which("man"):
            proc = subprocess.run(["man", "-l", os.path.join(man, "allocscope-record.1.gz")],
                                  capture_output=True, text=True, env={**clean_env(), "MANPAGER": "cat"})
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("usage: allocscope record", proc.stdout.replace("\u2010", "-"))

    def test_version_names_the_profile_format(self):
        proc = self.run_cli(["--version"])
        self.assertEqual(proc.returncode, 0)
        with open(os.path.join(SOURCE, "include", "allocscope", "format.h")) as f:
            header = f.read()
        version = re.search(r"kVersion = (\d+);", header).group(1)
        self.assertIn(f"profile format version {version}", proc.stdout)

    def record_and_report(self, program, libc):
        out = os.path.join(self.tmp, os.path.basename(program) + ".asp")
        proc = self.run_cli(["record", "-o", out, "--", program, "2", "20000"], timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(os.path.isfile(out), proc.stderr)
        dump = self.run_cli(["dump", "--json", out], timeout=300)
        self.assertEqual(dump.returncode, 0, dump.stderr)
        # Two threads x 20,000 mallocs and frees, every one of them counted.
        self.assertEqual(json.loads(dump.stdout)["totals"]["malloc"]["calls"], 40000)
        report = self.run_cli(["report", "--json", out], timeout=300)
        self.assertEqual(report.returncode, 0, report.stderr)
        j = json.loads(report.stdout)
        self.assertEqual(j["libc"], libc)
        # The lock test ran from the installed tree, with the probe built for the program's libc.
        test = j["contention"]["lock_test"]
        self.assertNotIn(test["result"], ("not_run", "failed"), test)
        self.assertIn(f"allocscope-lockprobe-{libc}", test["detail"])

    def test_records_a_glibc_program(self):
        self.record_and_report(target("harness-glibc"), "glibc")

    def test_records_a_musl_program(self):
        self.record_and_report(target("harness-musl"), "musl")


class DebianPackage(unittest.TestCase):
    def test_deb_installs_a_working_allocscope(self):
        if not shutil.which("cpack") or not shutil.which("dpkg-deb"):
            self.fail("cpack and dpkg-deb are needed (scripts/install-deps)")
        tmp = tempfile.mkdtemp(prefix="allocscope-deb-")
        try:
            proc = subprocess.run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"),
                                   "-B", tmp], capture_output=True, text=True, cwd=tmp, timeout=900)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
            self.assertEqual(len(debs), 1, os.listdir(tmp))
            deb = os.path.join(tmp, debs[0])
            fields = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Depends"], capture_output=True,
                                    text=True, check=True).stdout
            self.assertIn("Package: allocscope", fields)
            # dpkg-shlibdeps named the libraries the executable links (libfmt, zlib, xxhash, libc).
            for library in ["libc6", "libfmt", "zlib1g", "libxxhash", "binutils"]:
                self.assertIn(library, fields)
            contents = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                                      check=True).stdout
            for path in ["./usr/bin/allocscope", "./usr/lib/allocscope/liballocscope.so",
                         "./usr/lib/allocscope/allocscope-lockprobe-glibc",
                         "./usr/lib/allocscope/allocscope-lockprobe-musl",
                         "./usr/share/man/man1/allocscope-record.1.gz", "./usr/share/doc/allocscope/README.md"]:
                self.assertIn(path, contents)
            root = os.path.join(tmp, "root")
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            cli = os.path.join(root, "usr", "bin", "allocscope")
            out = os.path.join(tmp, "t.asp")
            proc = subprocess.run([cli, "record", "-o", out, "--", target("harness-musl"), "1", "5000"],
                                  capture_output=True, text=True, env=clean_env(), cwd=tmp, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            dump = subprocess.run([cli, "dump", "--json", out], capture_output=True, text=True, env=clean_env())
            self.assertEqual(dump.returncode, 0, dump.stderr)
            self.assertEqual(json.loads(dump.stdout)["totals"]["malloc"]["calls"], 5000)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
