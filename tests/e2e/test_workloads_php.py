"""Smoke tests of the PHP workloads' set-up scripts (bench/workloads/{php-composer,php-musl,mallocng})
and of bench/workloads/php/run.

Each set-up script runs in its --smoke mode, which installs nothing and builds nothing big: it checks
prerequisites and does a tiny version of the work. A test is skipped, saying why, when the Debian
packages a script needs are not installed (the script then exits 3). Where the full builds are
cached (the set-up scripts have been run on this machine), the built programs are also run briefly,
and php/run measures a small composer project once.
"""
import json
import os
import re
import subprocess
import tempfile
import shutil
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORKLOADS = os.path.join(ROOT, "bench", "workloads")
HARNESS = os.path.join(WORKLOADS, "stress", "harness.c")
MISSING = 3  # the set-up scripts' exit status for missing packages


def run(argv, timeout=110, env=None):
    full_env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "USE_ZEND_ALLOC")}
    full_env.update(env or {})
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=full_env,
                          stdin=subprocess.DEVNULL)


def smoke(name):
    proc = run([os.path.join(WORKLOADS, name, "setup"), "--smoke"])
    if proc.returncode == MISSING:
        raise unittest.SkipTest(f"{name}: {proc.stdout.strip()}")
    return proc


def variables(text):
    """NAME=value lines that the scripts print for other tools."""
    return dict(re.findall(r"^([A-Z_]+)=(\S+)$", text, re.M))


def small_project(directory):
    """A composer project over Composer's own classes (a few hundred)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "composer.json"), "w") as f:
        json.dump({"name": "allocscope/smoke", "version": "1.0.0", "type": "project",
                   "autoload": {"classmap": ["/usr/share/php/Composer"]},
                   "config": {"disable-tls": True}}, f)
    return directory


class SetupSmoke(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="allocscope-php-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_php_composer(self):
        proc = smoke("php-composer")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        m = re.search(r"smoke: dumpautoload ok: (\d+) classes, ZendMM on and off", proc.stdout)
        self.assertIsNotNone(m, proc.stdout)
        self.assertGreater(int(m.group(1)), 50)
        self.assertRegex(proc.stdout, r"smoke: cached: (yes|no)")
        if "cached: yes" in proc.stdout:
            project = variables(proc.stdout)["PHP_COMPOSER_PROJECT"]
            with open(os.path.join(project, "composer.json")) as f:
                classmap = json.load(f)["autoload"]["classmap"]
            self.assertGreater(len(classmap), 10)

    def test_mallocng(self):
        proc = smoke("mallocng")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertRegex(proc.stdout, r"smoke: (built from musl-[\d.]+ and checked ok|no musl source cached)")
        if "cached: yes" not in proc.stdout:
            self.skipTest("libmallocng.so is not built (bench/workloads/mallocng/setup)")
        lib = variables(proc.stdout)["LIBMALLOCNG"]
        # musl's allocator is in use: it keeps the exact size of each block
        src = os.path.join(self.dir, "usable.c")
        with open(src, "w") as f:
            f.write("#include <malloc.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                    "int main(void){void *p = malloc(100); printf(\"%zu\\n\", malloc_usable_size(p));"
                    " free(p); return 0;}\n")
        exe = os.path.join(self.dir, "usable")
        self.assertEqual(run(["gcc", "-O0", "-o", exe, src]).returncode, 0)
        self.assertEqual(run([exe], env={"LD_PRELOAD": lib}).stdout.strip(), "100")
        self.assertNotEqual(run([exe]).stdout.strip(), "100", "glibc's malloc rounds sizes up")
        # threads: the stress harness, briefly
        harness = os.path.join(self.dir, "harness")
        self.assertEqual(run(["gcc", "-O2", "-pthread", "-o", harness, HARNESS]).returncode, 0)
        h = run([harness, "4", "20000"], env={"LD_PRELOAD": lib})
        self.assertEqual(h.returncode, 0, h.stderr)
        self.assertRegex(h.stderr, r"sink=\d+")

    def test_php_musl(self):
        proc = smoke("php-musl")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("php-musl: smoke: toolchain ok", proc.stdout)
        if "cached: yes" not in proc.stdout:
            self.skipTest("the musl and gcc PHP builds are not cached (bench/workloads/php-musl/setup)")
        v = variables(proc.stdout)
        versions = {}
        for name in ("MUSL_PHP", "GCC_PHP"):
            r = run([v[name], "-n", "-r", "echo PHP_VERSION, ' ', function_exists('mb_strlen') ? 1 : 0;"])
            self.assertEqual(r.returncode, 0, r.stderr)
            versions[name] = r.stdout.strip()
            self.assertTrue(versions[name].endswith(" 1"), versions[name])
        self.assertEqual(versions["MUSL_PHP"], versions["GCC_PHP"], "both builds are of one source")
        interp = run(["readelf", "-l", v["MUSL_PHP"]]).stdout
        self.assertIn("ld-musl", interp)

    def test_php_threaded(self):
        proc = smoke("php-threaded")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertRegex(proc.stdout, r"php-threaded: smoke: cached: (yes|no)")
        if "cached: yes" not in proc.stdout:
            self.skipTest("the ZTS PHP builds are not cached (bench/workloads/php-threaded/setup)")
        hosts = dict(re.findall(r"^php-threaded: (musl|gcc) host: +(\S+)$", proc.stdout, re.M))
        self.assertEqual(sorted(hosts), ["gcc", "musl"], proc.stdout)
        for libc, host in hosts.items():
            for zend_alloc in ("1", "0"):
                r = run([host, "--workers", "3", "--requests", "4"], env={"USE_ZEND_ALLOC": zend_alloc})
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertRegex(r.stdout, r"(?m)^requests 12 errors 0 seconds [\d.]+ rps [\d.]+$", r.stdout)
                self.assertRegex(r.stdout, r"latency_us p50 \d+ p90 \d+ p99 \d+ max \d+")
        self.assertIn("ld-musl", run(["readelf", "-l", hosts["musl"]]).stdout)

    def test_php_threaded_locks_on_musl(self):
        """record --locks on the musl host: PHP 8.2's zend_strtod guards the Balloc/Bfree free lists
        with one global mutex in a thread-safe build, and float formatting (sprintf, json_encode,
        serialize) goes through it on every request: with 4 workers its waits are named."""
        proc = smoke("php-threaded")
        if "cached: yes" not in proc.stdout:
            self.skipTest("the ZTS PHP builds are not cached (bench/workloads/php-threaded/setup)")
        host = dict(re.findall(r"^php-threaded: (musl|gcc) host: +(\S+)$", proc.stdout, re.M))["musl"]
        cli = os.path.join(os.environ.get("ALLOCSCOPE_BUILD", os.path.join(ROOT, "build")), "analyzer", "allocscope")
        profile = os.path.join(self.dir, "musl.asp")
        r = run([cli, "record", "--locks", "-o", profile, "--", host, "--workers", "4", "--requests", "30"], timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"requests 120 errors 0 ")
        rep = run([cli, "report", "--json", profile], timeout=300)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        locks = json.loads(rep.stdout)["locks"]
        self.assertTrue(locks["recorded"])
        dtoa = [lock for lock in locks["locks"]
                if any(f in ("Balloc", "Bfree") for s in lock["sites"] for f in s["chain"][:2])]
        self.assertTrue(dtoa, json.dumps(locks["locks"], indent=1)[:3000])
        self.assertGreater(dtoa[0]["waits"], 0)
        self.assertGreater(dtoa[0]["threads"], 1)

    def test_php_threaded_http(self):
        proc = smoke("php-threaded")
        if "cached: yes" not in proc.stdout or not shutil.which("wrk"):
            self.skipTest("needs the cached ZTS PHP builds and wrk")
        host = dict(re.findall(r"^php-threaded: (musl|gcc) host: +(\S+)$", proc.stdout, re.M))["gcc"]
        r = run([host, "--workers", "2", "--wrk", "2"], timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"Requests/sec:\s+[\d.]+")       # wrk's report
        m = re.search(r"^requests (\d+) errors 0 ", r.stdout, re.M)  # the host's own
        self.assertIsNotNone(m, r.stdout)
        self.assertGreater(int(m.group(1)), 0)


class PhpRun(unittest.TestCase):
    SCRIPT = os.path.join(WORKLOADS, "php", "run")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="allocscope-php-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_missing_project_is_reported(self):
        proc = run([self.SCRIPT, "--runs", "1", "--project", os.path.join(self.dir, "nothing")])
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertIn("missing: project", proc.stderr)

    def test_print_commands(self):
        proc = run([self.SCRIPT, "--print-commands"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        v = variables(proc.stdout)
        for name in ("GCC_PHP", "MUSL_PHP", "LIBMALLOCNG", "PHP_COMPOSER_PROJECT"):
            self.assertIn(name, v)
        self.assertIn(f"--variant musl-php={v['MUSL_PHP']} -- {v['GCC_PHP']} -n ", proc.stdout)

    def test_brief_run(self):
        for name in ("php-musl", "mallocng"):
            out = smoke(name).stdout
            if "cached: yes" not in out:
                self.skipTest(f"{name} is not built (bench/workloads/{name}/setup)")
        if not os.path.isdir("/usr/share/php/Composer") or not os.path.exists("/usr/bin/composer"):
            self.skipTest("composer is not installed")
        out = os.path.join(self.dir, "run.json")
        proc = run([self.SCRIPT, "--runs", "1", "--warmup", "0", "--project",
                    small_project(os.path.join(self.dir, "project")), "--json", out])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(out) as f:
            data = json.load(f)
        self.assertGreater(data["classes"], 50)
        for mode in ("on", "off"):
            rows = data["summary"][mode]
            for name in ("gcc", "gcc+mallocng", "musl"):
                self.assertGreater(rows[name]["wall_ns"], 0)
                self.assertEqual(rows[name]["runs"], 1)
            self.assertIn("allocator_part_s", rows["answer"])
        self.assertEqual(data["setups"]["gcc+mallocng"]["env"]["LD_PRELOAD"].split("/")[-1],
                         "libmallocng.so")
        self.assertIn("whole gap (musl − gcc)", proc.stdout)


if __name__ == "__main__":
    unittest.main()
