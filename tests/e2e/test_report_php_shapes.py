"""End-to-end tests of `report --by shape` and `report --by callsite` on a real PHP workload.

Debian's PHP CLI (php8.2-cli) runs `composer dumpautoload -o --classmap-authoritative` over a small
project whose class map is Composer's own classes (Debian's composer package), or, without
composer, a short script that builds strings and arrays. It runs under `allocscope record --trace --sample 1`
with USE_ZEND_ALLOC=0 (PHP's allocator, ZendMM, off: every emalloc is a malloc) and with ZendMM on
(it takes its memory from mmap in 2 MiB chunks, so only persistent allocations and libraries call
malloc), with a stack on every call (--stacks=1), and once more with ZendMM off and --stacks=16.
The musl-built PHP of bench/workloads/php-musl runs the same when its build is cached.

What is asserted holds whatever the machine's speed: no figure is copied from a run.
"""
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import unittest

from allocscope_e2e import CLI
from test_workloads_php import small_project, smoke, variables

COMPOSER = "/usr/bin/composer"
COMPOSER_CLASSES = "/usr/share/php/Composer"
# Debian's PHP loads these as shared extensions; -n leaves out php.ini (and opcache).
DEBIAN_EXT = ["-d", "extension=ctype", "-d", "extension=iconv", "-d", "extension=posix",
              "-d", "extension=tokenizer"]
# Without composer: temporary strings of 1..210 bytes freed at once, then strings and arrays
# kept until the end.
SCRIPT = r"""
$n = 0;
for ($i = 0; $i < 100000; $i++) {
    $s = str_repeat("a", $i % 200) . $i;
    $n += strlen($s);
}
$keep = [];
for ($i = 0; $i < 20000; $i++) {
    $keep[] = "k" . $i;
}
$rows = [];
for ($i = 0; $i < 2000; $i++) {
    $rows["key$i"] = array_fill(0, 8, $i);
}
echo $n, " ", count($keep), " ", count($rows), "\n";
"""
SHORT = ("<1us", "<10us")  # the bands of the short-lived shapes (docs/shapes.md)
SMALL = 256                # bytes: "small" classes end at or below this
STACK_EVERY = 16           # --stacks=N of the sampled run


def debian_php():
    for path in ("/usr/bin/php8.2", "/usr/bin/php"):
        if os.path.exists(path):
            return path
    raise unittest.SkipTest("Debian's PHP is not installed (apt-get install php8.2-cli)")


def symbol_names(exe):
    """The function symbols the analyzer reads from `exe` (its .symtab, else its .dynsym), as
    {name} and [(value, size)]; None without binutils' nm."""
    if not shutil.which("nm"):
        return None
    for options in (["--defined-only", "-S"], ["-D", "--defined-only", "-S"]):
        proc = subprocess.run(["nm", *options, exe], capture_output=True, text=True)
        names, ranges = set(), []
        for line in proc.stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[2] in "TtWwi":
                # GCC's clones (f.constprop.0, f.part.0, f.cold) are f to addr2line.
                names.update({parts[3], parts[3].split(".")[0]})
                ranges.append((int(parts[0], 16), int(parts[1], 16)))
        if names:
            return names, ranges
    return None


def sections(text):
    """The lines of a text report after its header (which shows the command line whole)."""
    lines = text.splitlines()
    return lines[lines.index("") + 1:] if "" in lines else lines


class PhpShapes:
    """Records the workload with ZendMM off and on once per class; the tests read the reports.

    runs: "off1" (USE_ZEND_ALLOC=0, --stacks=1), "on1" (ZendMM on, --stacks=1) and "off16"
    (USE_ZEND_ALLOC=0, --stacks=16).
    """
    php = None          # the PHP binary
    php_options = []    # before the script

    @classmethod
    def find_php(cls):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.php = cls.find_php()
        cls.dir = tempfile.mkdtemp(prefix="allocscope-php-shapes-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.cache = {}
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "USE_ZEND_ALLOC") and not k.startswith("ALLOCSCOPE_")}
        if os.path.exists(COMPOSER) and os.path.isdir(COMPOSER_CLASSES):
            cls.workload = "composer"
            project = small_project(os.path.join(cls.dir, "project"))
            argv = [cls.php, "-n", *cls.php_options, COMPOSER, "--no-interaction",
                    f"--working-dir={project}", "dumpautoload", "-o", "--classmap-authoritative"]
            # COLUMNS and LINES: composer asks no `stty` for the terminal's size (no child process).
            env.update({"COMPOSER_ALLOW_SUPERUSER": "1", "COMPOSER_HOME": os.path.join(cls.dir, "home"),
                        "COLUMNS": "100", "LINES": "50"})
        else:
            cls.workload = "script"
            argv = [cls.php, "-n", "-r", SCRIPT]
        cls.runs, cls.maxrss = {}, {}
        for name, zend, stacks in (("off1", "0", 1), ("on1", None, 1), ("off16", "0", STACK_EVERY)):
            run_env = dict(env)
            if zend is not None:
                run_env["USE_ZEND_ALLOC"] = zend
            path = os.path.join(cls.dir, f"{name}.asp")
            with open(os.path.join(cls.dir, f"{name}.out"), "w+") as out:
                proc = subprocess.Popen([CLI, "record", "--trace", "--sample", "1", f"--stacks={stacks}", "-o", path,
                                         "--", *argv], env=run_env, cwd=cls.dir,
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
                timer = threading.Timer(300, proc.kill)
                timer.start()
                # The rusage of `record` includes that of PHP, which it waits for: ru_maxrss is
                # PHP's peak resident size (or record's own, were it larger).
                _, status, usage = os.wait4(proc.pid, 0)
                timer.cancel()
                proc.returncode = os.waitstatus_to_exitcode(status)
                out.seek(0)
                text = out.read()
            if proc.returncode != 0:
                raise AssertionError(f"{name}: record exited {proc.returncode}:\n{text[-2000:]}")
            if cls.workload == "composer":
                m = re.search(r"containing (\d+) classes", text)
                if not m or int(m.group(1)) < 50:
                    raise AssertionError(f"{name}: dumpautoload did not run:\n{text[-2000:]}")
            elif " 20000 2000" not in text:
                raise AssertionError(f"{name}: the script did not run:\n{text[-2000:]}")
            cls.runs[name] = path
            cls.maxrss[name] = usage.ru_maxrss * 1024

    # ---- the analyzer's outputs, each computed once ----

    def cli(self, *args):
        if args not in self.cache:
            proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.cache[args] = proc.stdout
        return self.cache[args]

    def report(self, run, by="shape"):
        j = json.loads(self.cli("report", self.runs[run], "--by", by, "--json"))
        self.assertTrue(j["has_trace"])
        self.assertEqual(j["by"], by)
        return j

    def all_sites(self, run):
        return json.loads(self.cli("callsites", self.runs[run], "--json", "--top", "0"))

    def module(self):
        return os.path.basename(os.path.realpath(self.php))

    # ---- shapes ----

    def test_the_trace_is_whole(self):
        for run in ("off1", "on1", "off16"):
            with self.subTest(run=run):
                j = self.report(run)
                t = j["trace"]
                # PHP exits normally: the trace ends with the process, no record is lost, and
                # the shim's counters count the same calls as its trace.
                self.assertTrue(t["complete"])
                self.assertEqual(t["missing_records"], 0)
                self.assertEqual(t["calls"], j["calls"])
                self.assertEqual(j["timed_calls"], j["calls"])  # a trace times every call

    def test_php_cli_is_single_threaded(self):
        # The PHP CLI (NTS build) runs one thread: every block is freed by the thread that got
        # it, and no two calls are ever inside the allocator at once.
        for run in ("off1", "on1"):
            with self.subTest(run=run):
                j = self.report(run)
                self.assertEqual(j["threads"], 1)
                self.assertEqual(j["trace"]["threads"], 1)
                self.assertEqual(j["cross_thread_frees"], 0)
                self.assertEqual(j["same_thread_frees"], j["trace"]["frees"])
                self.assertGreater(j["same_thread_frees"], 0)
                self.assertFalse([s for s in j["shapes"] if s["cross_thread"]])
                self.assertFalse([g for g in j["shape_groups"] if g["cross_thread"]])
                self.assertEqual(j["trace"]["concurrency"]["max_inside"], 1)

    def test_shapes_account_for_every_call(self):
        for run in ("off1", "on1"):
            with self.subTest(run=run):
                j = self.report(run)
                t = j["trace"]
                shape_calls = sum(s["calls"] for s in j["shapes"])
                shape_blocks = sum(s["blocks"] for s in j["shapes"])
                # Each block is in one shape, with the call that made it and, when a free ended
                # it, that free (a realloc that resizes counts with the block it makes).
                self.assertEqual(shape_blocks, t["blocks"])
                self.assertEqual(shape_calls, t["blocks"] + t["frees"])
                # A block ends freed, resized by realloc, or live at exit.
                self.assertEqual(t["blocks"], t["frees"] + t["resized"] + j["leaked_blocks"])
                # The calls in no shape are those that touch no block: free(NULL), failures,
                # frees and reallocs of blocks from before the trace, malloc_usable_size.
                usable = sum(c["ops"].get("malloc_usable_size", {}).get("calls", 0) for c in j["classes"])
                self.assertEqual(t["calls"] - shape_calls,
                                 t["null_frees"] + t["failed"] + t["unmatched_frees"]
                                 + t["unmatched_reallocs"] + usable)
                # The merged shapes are the same blocks and calls.
                self.assertEqual(sum(g["calls"] for g in j["shape_groups"]), shape_calls)
                self.assertEqual(sum(g["blocks"] for g in j["shape_groups"]), shape_blocks)
                self.assertAlmostEqual(sum(g["call_share"] for g in j["shape_groups"]), 1.0, places=2)

    def test_zendmm_off_sends_every_php_allocation_to_malloc(self):
        off, on = self.report("off1"), self.report("on1")
        # With ZendMM on, PHP's per-request memory comes from its 2 MiB mmap chunks; with
        # USE_ZEND_ALLOC=0 each emalloc, efree and erealloc is a malloc, free or realloc.
        self.assertGreaterEqual(off["calls"], 10 * on["calls"])
        self.assertGreaterEqual(sum(s["calls"] for s in off["shapes"]),
                                10 * sum(s["calls"] for s in on["shapes"]))
        # The persistent allocations reach malloc either way; off, the request memory adds to them.
        self.assertGreater(off["peak_live_bytes"], on["peak_live_bytes"])

    def test_the_dominant_shape_is_small_and_short_lived(self):
        off = self.report("off1")
        # PHP's churn is small strings, zvals and hash tables made and dropped at once.
        top = max(off["shapes"], key=lambda s: s["calls"])
        self.assertIsNotNone(top["hi"], top)
        self.assertLessEqual(top["hi"], SMALL, top)
        self.assertIn(top["lifetime"], SHORT, top)
        self.assertFalse(top["cross_thread"])
        short = sum(g["calls"] for g in off["shape_groups"] if g["lifetime"] == "short")
        self.assertGreater(short, 0.5 * sum(g["calls"] for g in off["shape_groups"]))
        top_group = max(off["shape_groups"], key=lambda g: g["calls"])
        self.assertEqual((top_group["lifetime"], top_group["cross_thread"]), ("short", False))
        # With ZendMM on, the blocks malloc sees are mostly the persistent ones (class and
        # function tables, interned strings), which live until PHP shuts down.
        on = self.report("on1")
        short = sum(g["calls"] for g in on["shape_groups"] if g["lifetime"] == "short")
        self.assertLess(short, 0.5 * sum(g["calls"] for g in on["shape_groups"]))

    def test_peak_live_bytes_is_between_the_largest_block_and_the_rss(self):
        for run in ("off1", "on1", "off16"):
            with self.subTest(run=run):
                j = self.report(run)
                # Every block was live once; what is live at exit was live at the peak too.
                self.assertGreaterEqual(j["peak_live_bytes"], max(s["max_size"] for s in j["shapes"]))
                self.assertEqual(j["trace"]["end_live_bytes"], j["leaked_bytes"])
                self.assertGreaterEqual(j["peak_live_bytes"], j["leaked_bytes"])
                # The live blocks were in PHP's memory (written to: PHP fills what it asks for):
                # no more than its resident peak.
                self.assertLessEqual(j["peak_live_bytes"], self.maxrss[run])

    def test_text_by_shape(self):
        j = self.report("off1")
        text = self.cli("report", self.runs["off1"], "--by", "shape")
        self.assertIn("Shapes, adjacent size classes merged", text)
        self.assertIn("Shapes by size class, lifetime and thread", text)
        top = max(j["shape_groups"], key=lambda g: g["time_ns"])
        self.assertIn(top["description"], text)
        self.assertRegex(text, r"freed \(0 by another thread\)")
        self.assertIn("threads inside  at most 1,", text)
        self.assertNotIn("Size classes: calls and latency", text)
        for line in sections(text):
            self.assertLessEqual(len(line), 100, line)

    # ---- call sites ----

    def test_every_call_has_a_stack_and_the_sites_add_up_by_class(self):
        for run in ("off1", "on1"):
            with self.subTest(run=run):
                j, sites = self.report(run), self.all_sites(run)
                # --stacks=1: a stack on every call, however many distinct stacks PHP makes.
                self.assertEqual(sites["stackless_calls"], 0)
                self.assertEqual(sites["stack_calls"], j["calls"])
                # A call counts in the class of its request, a free in the class of the block it
                # frees, as in the shapes: each class's sites hold that class's shape calls, and
                # the calls without a size (free(NULL) …) are those in no shape.
                by_class, unsized = collections.Counter(), 0
                for row in sites["callsites"]:
                    if row["size_known"]:
                        by_class[(row["lo"], row["hi"])] += row["calls"]
                    else:
                        unsized += row["calls"]
                shapes = collections.Counter()
                for s in j["shapes"]:
                    shapes[(s["lo"], s["hi"])] += s["calls"]
                self.assertEqual(dict(by_class), dict(shapes))
                self.assertEqual(unsized, j["calls"] - sum(shapes.values()))

    def test_one_call_in_n_carries_a_stack(self):
        sites = self.all_sites("off16")
        # Every STACK_EVERY-th call, and every slow one, from the first call to the last (Debian's
        # PHP makes thousands more distinct stacks than the shim's per-thread table holds).
        self.assertGreaterEqual(sites["stack_calls"], sites["calls"] // STACK_EVERY)
        self.assertLess(sites["stack_calls"], 2 * sites["calls"] / STACK_EVERY)
        self.assertEqual(sites["stack_calls"] + sites["stackless_calls"], sites["calls"])

    def test_call_sites_are_the_php_functions_that_allocate(self):
        exe = self.module()
        for run in ("off1", "off16"):
            with self.subTest(run=run):
                sites = self.all_sites(run)
                ops = collections.defaultdict(collections.Counter)
                for row in sites["callsites"]:
                    for op, n in row["ops"].items():
                        ops[op][(row["site"], row["module"])] += n
                # USE_ZEND_ALLOC=0 makes PHP's heap call __zend_malloc and __zend_realloc
                # (exported functions of the php binary), which call malloc and realloc. (The
                # script reallocs little: there, start-up's persistent reallocs are most of them.)
                checks = [("malloc", "__zend_malloc")]
                if self.workload == "composer":
                    checks.append(("realloc", "__zend_realloc"))
                for op, site in checks:
                    total = sum(ops[op].values())
                    self.assertGreaterEqual(ops[op][(site, exe)], 0.9 * total, ops[op].most_common(5))
                # efree jumps to free: a free's site is the PHP function that dropped the value.
                frees = ops["free"]
                self.assertGreaterEqual(sum(n for (site, module), n in frees.items() if module == exe),
                                        0.9 * sum(frees.values()), frees.most_common(5))
        zend_malloc = {run: sum(r["ops"].get("malloc", 0) for r in self.all_sites(run)["callsites"]
                                if r["site"] == "__zend_malloc")
                       for run in ("off1", "on1")}
        self.assertGreater(zend_malloc["on1"], 0, "persistent allocations call malloc with ZendMM on")
        self.assertGreaterEqual(zend_malloc["off1"], 10 * zend_malloc["on1"])

    def test_costliest_sites_of_small_classes_are_zend_functions(self):
        # The ten costliest call sites of each small class (report --by callsite) name PHP's
        # allocation paths: a frame of each class's chains is zend_*, _e* or __zend_*.
        for run in ("off1", "on1"):
            with self.subTest(run=run):
                j = self.report(run, "callsite")
                rows = collections.defaultdict(list)
                for row in j["callsites"]:
                    if row["size_known"] and row["hi"] is not None and row["hi"] <= SMALL:
                        rows[(row["lo"], row["hi"])].append(row)
                self.assertGreaterEqual(len(rows), 5)
                for cls, found in rows.items():
                    if sum(r["calls"] for r in found) < 100:
                        continue
                    self.assertLessEqual(len(found), 10)
                    self.assertTrue(any(f.startswith(("zend_", "_e", "__zend")) for r in found for f in r["chain"]),
                                    (cls, [r["chain"] for r in found]))
                # The report's rows are those of the callsites command.
                own = json.loads(self.cli("callsites", self.runs[run], "--json"))
                self.assertEqual(own["callsites"], j["callsites"])

    def test_frames_resolve_through_the_binarys_symbols(self):
        exe = self.php if os.path.isabs(self.php) else shutil.which(self.php)
        symbols = symbol_names(os.path.realpath(exe))
        if symbols is None:
            self.skipTest("binutils' nm is not installed")
        names, ranges = symbols
        module = self.module()
        unresolved, named = set(), set()
        for run in ("off1", "on1"):
            for row in self.all_sites(run)["callsites"]:
                for frame in row["chain"]:
                    m = re.fullmatch(re.escape(module) + r"\+0x([0-9a-f]+)", frame)
                    if m:
                        unresolved.add(int(m.group(1), 16))
                if row["module"] == module and row["inlined"] == 0 and "+0x" not in row["site"]:
                    named.add(row["site"])
        self.assertTrue(named)
        # A site named in the php binary is one of its function symbols …
        self.assertEqual(named - names, set())
        # … and an address left as php+0xOFFSET is in none of them (looked up one byte back,
        # inside the call instruction): a static function that the stripped binary does not name.
        covered = [hex(o) for o in unresolved if any(v <= o - 1 < v + size for v, size in ranges)]
        self.assertEqual(covered, [])

    def test_text_by_callsite(self):
        j = self.report("off1", "callsite")
        text = self.cli("report", self.runs["off1"], "--by", "callsite")
        self.assertIn("Call sites: the costliest per size class", text)
        self.assertIn(f"{j['calls']:,} of {j['calls']:,} calls carry a stack", text)
        self.assertIn("__zend_malloc", text)
        for line in sections(text):  # chains and locations are cut to fit
            self.assertLessEqual(len(line), 100, line)


class DebianPhp(PhpShapes, unittest.TestCase):
    php_options = DEBIAN_EXT

    @classmethod
    def find_php(cls):
        return debian_php()


class MuslPhp(PhpShapes, unittest.TestCase):
    """The PHP source built with musl-gcc (bench/workloads/php-musl), when its build is cached:
    musl's malloc (mallocng), call stacks by frame pointers, and a binary with its .symtab."""

    @classmethod
    def find_php(cls):
        out = smoke("php-musl").stdout
        if "cached: yes" not in out:
            raise unittest.SkipTest("the musl PHP is not built (bench/workloads/php-musl/setup)")
        return variables(out)["MUSL_PHP"]


if __name__ == "__main__":
    unittest.main()
