"""Hostile surroundings: the program must run on unchanged whatever the shim meets, and the
analyzer must answer damaged or forged profiles with one clear error, never a crash.

Environment (the shim): an unwritable output directory, a full disk, an existing file or a symlink
at the output path, a descriptor the program closes and reuses, file size and descriptor limits,
setuid (AT_SECURE) processes, a static program, nonsense in the ALLOCSCOPE_* variables.  In each
case the program's output and exit status are those it has without the shim, and the shim says
once on stderr what it did.  Some cases need root (mounts, setuid); they are skipped without it.

Input (the analyzer): profiles cut short and bit-flipped everywhere, wrong versions, foreign files,
and forged chunks (valid checks, absurd counts and lengths), read under a memory limit: exit 0 with
a whole document, or exit 2 with one line naming the file (and the byte offset of the damage).
"""
import ctypes
import ctypes.util
import json
import os
import re
import resource
import shutil
import stat
import struct
import subprocess
import tempfile
import time
import unittest

from allocscope_e2e import BUILD, CLI, target
from robustness import (FILE_ERROR, OFFSET_ERROR, SHIM, RobustnessCase, clean_env, one_error_line,
                        sized_calls, torture)

IS_ROOT = os.geteuid() == 0


# --- the profile format, as far as forging needs it (include/allocscope/format.h) ---------------

_xxhash = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
_xxhash.XXH3_64bits.restype = ctypes.c_uint64
_xxhash.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

MAGIC = b"ALCSCOPE"
CHUNK_MAGIC = 0x4B434341
FILE_HEADER = 64
CHUNK_HEADER = 24
MAX_PAYLOAD = 1 << 24
PROCESS, CALIBRATION, THREAD_STATS, EVENTS, PROCESS_END, NOTE = 1, 2, 3, 4, 5, 6


def xxh3(data):
    return _xxhash.XXH3_64bits(bytes(data), len(data))


def file_header(version=1, header_size=FILE_HEADER):
    return MAGIC + struct.pack("<IIQ", version, header_size, 0) + bytes(40)


def chunk(kind, payload, payload_size=None):
    """A chunk whose checks are right, whatever it says."""
    size = len(payload) if payload_size is None else payload_size
    first = struct.pack("<IHHI", CHUNK_MAGIC, kind, 0, size)
    return first + struct.pack("<IQ", xxh3(first) & 0xFFFFFFFF, xxh3(payload)) + payload


def chunks_of(data):
    """(offset, type, payload) of each whole chunk of a profile."""
    at, out = FILE_HEADER, []
    while at + CHUNK_HEADER <= len(data):
        _, kind, _, size = struct.unpack_from("<IHHI", data, at)
        if at + CHUNK_HEADER + size > len(data):
            break
        out.append((at, kind, data[at + CHUNK_HEADER:at + CHUNK_HEADER + size]))
        at += CHUNK_HEADER + size
    return out


def process_info(exe_len, args_len, alloc_len, ver_len, libc=1):
    return struct.pack("<IIQQQBBHIIIII", 1, 1, 0, 0, 0, libc, 0, 0, exe_len, args_len, alloc_len,
                       ver_len, 0)


def stats_header(serial, n_rows, seq=1, part=0x8000, state=1):
    return (struct.pack("<IIIHBB", serial, serial, seq, part, state, 0) + bytes(8 * 4)
            + bytes(48) + bytes(8 * 3) + struct.pack("<II", n_rows, 0))


def stats_row(op, bucket, calls, n_bins=0):
    return struct.pack("<BBHIQQQQQQ", op, bucket, n_bins, 0, calls, calls * 16, 0, 0, 0, 0)


class HostileEnvironment(RobustnessCase):
    """The shim in surroundings that do not let it record, or try to trick it."""

    def mount_tmpfs(self, options):
        if not IS_ROOT:
            self.skipTest("mounting a tmpfs needs root")
        where = tempfile.mkdtemp(prefix="allocscope-mnt-", dir=self.dir)
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", where],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        self.addCleanup(subprocess.run, ["umount", "-l", where], capture_output=True)
        return where

    def check_passive(self, argv, out, expect, env=None, **kw):
        """The program alone and under the shim writing to `out`: unchanged, and one shim line
        containing `expect` (a fork child inherits what its parent said)."""
        plain = self.run_plain(argv, **kw)
        run = self.run_preloaded(argv, out, env=env, **kw)
        self.assert_unchanged(plain, run, out)
        lines = run.shim_lines()
        self.assertEqual(len(lines), 1, run.stderr)
        self.assertIn(expect, lines[0])
        return run

    def test_unwritable_output_directory(self):
        prog = [torture("proc-glibc"), "fork"]
        ro = self.mount_tmpfs("ro,size=64k")
        run = self.check_passive(prog, os.path.join(ro, "p.asp"), "Read-only file system")
        self.assertIn("not recording", run.shim_lines()[0])
        self.assertEqual(os.listdir(ro), [])

    def test_output_directory_that_cannot_be(self):
        a_file = os.path.join(self.dir, "file")
        open(a_file, "w").close()
        for libc in ("glibc", "musl"):
            prog = [torture(f"proc-{libc}"), "fork"]
            with self.subTest(libc=libc, case="parent is a file"):
                self.check_passive(prog, os.path.join(a_file, "p.asp"), "Not a directory")
            with self.subTest(libc=libc, case="no such directory"):
                self.check_passive(prog, os.path.join(self.dir, "none", "p.asp"), "No such file")
            with self.subTest(libc=libc, case="name too long"):
                self.check_passive(prog, os.path.join(self.dir, "x" * 300), "too long")
            with self.subTest(libc=libc, case="path longer than a line"):
                run = self.check_passive(prog, os.path.join(self.dir, *["y" * 200] * 25),
                                         "cannot create a profile at")
                self.assertTrue(run.stderr.endswith("\n"))  # cut short, still one whole line

    def test_record_into_unwritable_directory(self):
        ro = self.mount_tmpfs("ro,size=64k")
        prog = [torture("proc-musl"), "fork_exec"]
        plain = self.run_plain(prog)
        run = self.run_recorded(prog, os.path.join(ro, "p.asp"))
        self.assert_unchanged(plain, run)
        self.assertIn("no profile was written", run.stderr)

    def test_disk_full_while_recording(self):
        full = self.mount_tmpfs("size=64k")
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                out = os.path.join(full, f"{libc}.asp")
                run = self.check_passive([torture(f"fds-{libc}"), "busy", "1000"], out,
                                         "No space left on device", env={"ALLOCSCOPE_SAMPLE": "1"})
                self.assertIn("cut short", run.shim_lines()[0])
                # Reads up to the last whole chunk; unless another thread's chunk landed after the
                # one cut short (docs/robustness.md, known limits): then one error at its offset.
                rc, doc, err = self.dump_quietly(out)
                if rc == 0:
                    self.assertEqual(json.loads(doc)["process"]["libc"], libc)
                else:
                    self.assertEqual(rc, 2, err)
                    self.assertRegex(one_error_line(err) or "", r"offset \d+: ")
                os.unlink(out)

    def test_disk_full_from_the_start(self):
        full = self.mount_tmpfs("size=16k")
        fd = os.open(os.path.join(full, "filler"), os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, bytes(4096)) > 0:
                pass
        except OSError:
            pass
        os.close(fd)
        run = self.check_passive([torture("proc-glibc"), "fork"], os.path.join(full, "p.asp"),
                                 "cannot write the profile")
        self.assertEqual(os.listdir(full), ["filler"])  # nothing half-written left behind

    def test_file_size_limit(self):
        # A write that starts past RLIMIT_FSIZE raises SIGXFSZ, which would kill the program.
        for limit, expect in ((0, "cannot write the profile"), (20000, "File too large")):
            for libc in ("glibc", "musl"):
                with self.subTest(limit=limit, libc=libc):
                    out = os.path.join(self.dir, f"fsize-{limit}-{libc}.asp")
                    limited = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
                    run = self.check_passive([torture(f"fds-{libc}"), "busy", "600"], out, expect,
                                             env={"ALLOCSCOPE_SAMPLE": "1"}, preexec_fn=limited)
                    if limit:
                        self.assertLessEqual(os.path.getsize(out), limit)
                        self.dump(out)
                    else:
                        self.assertFalse(os.path.exists(out))

    def test_descriptor_limits(self):
        prog = [torture("proc-glibc"), "fork"]
        for limit in (3, 8, 40, 200):
            with self.subTest(limit=limit):
                limited = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
                plain = self.run_plain(prog, preexec_fn=limited)
                out = os.path.join(self.dir, f"nofile-{limit}.asp")
                run = self.run_preloaded(prog, out, preexec_fn=limited)
                self.assert_unchanged(plain, run)
                if limit == 3:  # only stdio: the loader cannot even open the shim, and says so
                    self.assertIn("cannot be preloaded", run.stderr)
                    self.assertEqual(run.profiles, [])
                else:
                    self.assertEqual(run.shim_lines(), [])
                    self.assertEqual(len(self.dumps(run)), 2)

    def test_a_program_that_locks_all_its_memory(self):
        # mlockall(MCL_FUTURE) makes every new mapping resident at once: the shim's slot of each
        # thread (1.2 MiB of address space, of which a thread touches a few pages) once took 38 MiB
        # more for 32 threads.  Its peak resident size may grow by the pages the shim uses, no more.
        # mlockall must succeed without the shim (the tests run as root, which may lock memory
        # beyond RLIMIT_MEMLOCK): the runs' memory is then compared.
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                prog = [torture(f"mlock-{libc}"), "32"]
                plain = self.run_plain(prog)
                self.assertEqual(plain.rc, 0, f"mlockall without the shim: {plain.stderr}")
                run = self.run_preloaded(prog, os.path.join(self.dir, f"mlock-{libc}.asp"))
                self.assert_unchanged(plain, run)
                rss = lambda outcome: int(re.search(r"mlock: maxrss (\d+) KiB", outcome.stderr).group(1))
                self.assertLess(rss(run) - rss(plain), 8 * 1024, run.stderr)
                self.dump(run.profiles[0])

    def test_stderr_closed(self):
        prog = [torture("proc-glibc"), "fork"]
        no_stderr = lambda: os.close(2)
        plain = self.run_plain(prog, preexec_fn=no_stderr)
        run = self.run_preloaded(prog, os.path.join(self.dir, "none", "p.asp"), preexec_fn=no_stderr)
        self.assert_unchanged(plain, run)

    def test_program_keeps_its_descriptor_numbers(self):
        # Under a low descriptor limit too: the profile's descriptor took 3 below 65 (a program's
        # first open() then returned 4).
        for libc in ("glibc", "musl"):
            for limit in (None, 8, 64):
                with self.subTest(libc=libc, limit=limit):
                    limited = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))) if limit else None
                    prog = [torture(f"fds-{libc}"), "firstfd"]
                    plain = self.run_plain(prog, preexec_fn=limited)
                    run = self.run_preloaded(prog, os.path.join(self.dir, f"first-{libc}-{limit}.asp"),
                                             preexec_fn=limited)
                    self.assert_unchanged(plain, run)
                    self.assertEqual(run.shim_lines(), [])
                    self.dump(run.profiles[0])

    def test_program_closes_and_reuses_the_profile_descriptor(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                data = tempfile.mkdtemp(dir=self.dir)
                prog = [torture(f"fds-{libc}"), "reuse", data]
                plain = self.run_plain(prog)
                self.assertIn("data intact", plain.stdout)
                out = os.path.join(self.dir, f"reuse-{libc}.asp")
                run = self.check_passive(prog, out, "closed the descriptor of the profile")
                with open(os.path.join(data, "data.txt"), "rb") as f:
                    self.assertEqual(f.read(), b"hello\n")
                self.dump(out)

    def named_root(self, prog, out):
        """The program as the process the shim was told to write `out` for (ALLOCSCOPE_ROOT_PID)."""
        script = 'ALLOCSCOPE_ROOT_PID=$$ LD_PRELOAD="$SHIM_PATH"; export ALLOCSCOPE_ROOT_PID LD_PRELOAD; exec "$@"'
        env = clean_env({"SHIM_PATH": SHIM, "ALLOCSCOPE_OUTPUT": out})
        proc = subprocess.run(["/bin/sh", "-c", script, "sh"] + prog, capture_output=True,
                              text=True, env=env, cwd=self.dir, timeout=120)
        from robustness import Outcome
        return Outcome(proc, self.profiles_at(out))

    def test_existing_file_or_symlink_at_the_output_path(self):
        victim = os.path.join(self.dir, "victim")
        with open(victim, "w") as f:
            f.write("precious")
        paths = {"file": os.path.join(self.dir, "exists.asp"),
                 "symlink": os.path.join(self.dir, "link.asp"),
                 "dangling symlink": os.path.join(self.dir, "dangling.asp"),
                 "fifo": os.path.join(self.dir, "fifo.asp")}
        shutil.copy(victim, paths["file"])
        os.symlink(victim, paths["symlink"])
        os.symlink(os.path.join(self.dir, "created-through-a-link"), paths["dangling symlink"])
        os.mkfifo(paths["fifo"])  # read to see whose profile it is: must not block
        prog = [torture("proc-glibc"), "fork"]
        plain = self.run_plain(prog)
        for case, out in paths.items():
            with self.subTest(case=case):
                run = self.named_root(prog, out)
                self.assert_unchanged(plain, run)
                lines = run.shim_lines()
                self.assertEqual(len(lines), 1, run.stderr)
                self.assertIn(f"{out} exists; writing the profile to {out}.", lines[0])
                written = lines[0].split(" to ")[1].split(" instead")[0]
                self.assertEqual(self.dump(written)["process"]["args"][1:], ["fork"])
                with self.subTest(case=case, via="record"):
                    rec = subprocess.run([CLI, "record", "-o", out, "--"] + prog,
                                         capture_output=True, text=True)
                    self.assertEqual(rec.returncode, 2)
                    self.assertIn("already exists; not overwriting", rec.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious")
        self.assertFalse(os.path.lexists(os.path.join(self.dir, "created-through-a-link")))
        self.assertTrue(os.path.islink(paths["symlink"]))

    def test_static_program(self):
        prog = target("static_hello-glibc")
        plain = self.run_plain([prog])
        run = self.run_preloaded([prog], os.path.join(self.dir, "static.asp"))
        self.assert_unchanged(plain, run)  # the loader never sees LD_PRELOAD: nothing happens
        self.assertEqual(run.profiles, [])
        rec = self.run_recorded([prog], "static-rec.asp")
        self.assertEqual(rec.rc, 2)
        self.assertIn("statically linked", rec.stderr)
        self.assertEqual(rec.profiles, [])

    def test_nonsense_in_the_environment(self):
        prog = [torture("proc-glibc"), "fork"]
        plain = self.run_plain(prog)
        for name, value in (("ALLOCSCOPE_SAMPLE", "abc"), ("ALLOCSCOPE_SAMPLE", "-1"),
                            ("ALLOCSCOPE_SAMPLE", "99999999999999999999"),
                            ("ALLOCSCOPE_SAMPLE", "4294967295"), ("ALLOCSCOPE_CPU_SAMPLE", "0"),
                            ("ALLOCSCOPE_CPU_SAMPLE", "1"), ("ALLOCSCOPE_ROOT_PID", "x"),
                            ("ALLOCSCOPE_ROOT_PID", "1"), ("ALLOCSCOPE_FREE_SIZES", "yes")):
            with self.subTest(name=name, value=value):
                out = os.path.join(self.dir, f"env-{name}-{len(value)}-{value[:3]}.asp")
                run = self.run_preloaded(prog, out, env={name: value})
                self.assert_unchanged(plain, run)
                self.assertEqual(run.shim_lines(), [])
                docs = self.dumps(run, count=2)
                self.assertEqual(sum(sized_calls(j, "malloc", 2222) for j in docs), 20)


@unittest.skipUnless(IS_ROOT, "setuid programs need root")
class SetuidPrograms(RobustnessCase):
    """AT_SECURE: the shim loads (it is linked in, or preloaded from a trusted directory with its
    set-user-ID bit, the only preload glibc honours then), stays passive and says so once.

    musl ignores LD_PRELOAD altogether in a secure process, and glibc ignores preload paths with a
    slash: the shim is never loaded that way, so the programs here need the shim themselves
    (DT_NEEDED with an absolute RUNPATH), which both loaders honour."""

    def setuid_copy(self, path):
        where = tempfile.mkdtemp(prefix="suid-", dir=self.dir)
        os.chmod(self.dir, 0o755)
        os.chmod(where, 0o755)
        copy = os.path.join(where, os.path.basename(path))
        shutil.copy(path, copy)
        os.chown(copy, 0, 0)
        os.chmod(copy, 0o4755)
        return copy

    def as_nobody(self, argv, env):
        cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/env", "-i"]
        cmd += [f"{k}={v}" for k, v in env.items()] + argv
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.dir, timeout=60)
        from robustness import Outcome
        return Outcome(proc)

    def setUp(self):
        super().setUp()
        if shutil.which("setpriv") is None:
            self.skipTest("setpriv is not installed")
        probe = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                "test", "-r", SHIM], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("nobody cannot read the build tree's shim")
        self.out = tempfile.mkdtemp(prefix="out-", dir=self.dir)
        os.chmod(self.out, 0o777)  # the program could write there: passivity is the shim's choice

    def test_linked_in_shim_is_passive(self):
        for libc in ("glibc", "musl"):
            with self.subTest(libc=libc):
                plain = self.as_nobody([self.setuid_copy(torture(f"secure_plain-{libc}"))], {})
                self.assertIn("AT_SECURE=1", plain.stdout)
                run = self.as_nobody([self.setuid_copy(torture(f"secure-{libc}"))],
                                     {"ALLOCSCOPE_OUTPUT": os.path.join(self.out, "s.asp")})
                self.assert_unchanged(plain, run)
                self.assertEqual(run.shim_lines(),
                                 ["allocscope: secure (setuid/setgid) process: not recording"])
                self.assertEqual(os.listdir(self.out), [])

    def test_preload_from_a_trusted_directory(self):
        """glibc preloads a library into a secure process only by a name without a slash, from
        its system directories, and only when the file has the set-user-ID bit.  In a private
        mount namespace, a set-user-ID copy of the shim is bound over a system library the
        program does not use, and preloaded under that name."""
        if shutil.which("unshare") is None:
            self.skipTest("unshare is not installed")
        trusted = [d for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                               "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu")
                   if os.path.exists(os.path.join(d, "libxxhash.so.0"))]
        if not trusted:
            self.skipTest("no libxxhash.so.0 in a system directory to stand in for")
        shim = self.setuid_copy(SHIM)
        prog = self.setuid_copy(torture("secure_plain-glibc"))
        plain = self.as_nobody([prog], {})
        inner = ("mount --bind \"$1\" \"$2\" && exec setpriv --reuid=nobody --regid=nogroup "
                 "--clear-groups /usr/bin/env -i LD_PRELOAD=libxxhash.so.0 ALLOCSCOPE_OUTPUT=\"$3\" \"$4\"")
        proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                               inner, "sh", shim, os.path.join(trusted[0], "libxxhash.so.0"),
                               os.path.join(self.out, "p.asp"), prog],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 and "mount" in proc.stderr:
            self.skipTest(f"cannot bind-mount here: {proc.stderr.strip()}")
        from robustness import Outcome
        run = Outcome(proc)
        self.assert_unchanged(plain, run)
        self.assertEqual(run.shim_lines(),
                         ["allocscope: secure (setuid/setgid) process: not recording"])
        self.assertEqual(os.listdir(self.out), [])


class HostileInput(RobustnessCase):
    """What `allocscope dump` makes of damaged, foreign and forged files."""

    MEMORY_LIMIT = 512 << 20  # address space for one dump: plenty for any real profile

    @classmethod
    def setUpClass(cls):
        # A small real profile (two threads, a few hundred calls) to damage.
        cls.seed_dir = tempfile.mkdtemp(prefix="allocscope-seed-")
        cls.seed = os.path.join(cls.seed_dir, "seed.asp")
        subprocess.run([CLI, "record", "-o", cls.seed, "--", torture("threads-glibc"), "tls", "2"],
                       capture_output=True, check=True, env=clean_env({"ALLOCSCOPE_SAMPLE": "1"}))
        with open(cls.seed, "rb") as f:
            cls.seed_bytes = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.seed_dir, ignore_errors=True)

    def dump_limited(self, path, json_output=True):
        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (self.MEMORY_LIMIT, self.MEMORY_LIMIT))
        cmd = [CLI, "dump"] + (["--json"] if json_output else []) + [path]
        return subprocess.run(cmd, capture_output=True, text=True, preexec_fn=limit, timeout=120)

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def assert_read_or_refused(self, path, want_offset=None, json_output=True):
        """Exit 0 with a whole JSON document, or exit 2 with one line naming the file (with the
        offset when want_offset says so).  Returns (exit status, error line or None)."""
        proc = self.dump_limited(path, json_output)
        self.assertIn(proc.returncode, (0, 2), f"{path}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        if proc.returncode == 0:
            if json_output:
                json.loads(proc.stdout)
            return 0, None
        line = one_error_line(proc.stderr)
        self.assertIsNotNone(line, f"not one line: {proc.stderr!r}")
        self.assertIn(path, line)
        self.assertNotIn("bad_alloc", line)
        if want_offset is not None:
            m = OFFSET_ERROR.match(line)
            self.assertIsNotNone(m, line)
            if want_offset is not True:
                self.assertEqual(int(m["offset"]), want_offset, line)
        else:
            self.assertIsNotNone(FILE_ERROR.match(line), line)
        return 2, line

    def test_cut_short_everywhere(self):
        data = self.seed_bytes
        boundaries = [at for at, _, _ in chunks_of(data)]
        cuts = set(range(0, 200)) | set(range(0, len(data), max(1, len(data) // 150)))
        for b in boundaries:
            cuts |= {b - 1, b, b + 1, b + CHUNK_HEADER - 1, b + CHUNK_HEADER, b + CHUNK_HEADER + 1}
        path = os.path.join(self.dir, "cut.asp")
        for cut in sorted(c for c in cuts if 0 <= c < len(data)):
            with self.subTest(cut=cut):
                with open(path, "wb") as f:
                    f.write(data[:cut])
                rc, line = self.assert_read_or_refused(path)
                if cut >= FILE_HEADER:
                    self.assertEqual(rc, 0, f"cut at {cut}: {line}")  # a file cut short reads

    def test_bit_flips_everywhere(self):
        data = self.seed_bytes
        positions = set(range(0, FILE_HEADER)) | set(range(0, len(data), max(1, len(data) // 250)))
        for at, _, _ in chunks_of(data):
            positions |= set(range(at, at + CHUNK_HEADER))
        path = os.path.join(self.dir, "flip.asp")
        detected = 0
        for pos in sorted(positions):
            for bit in (0, 6):
                damaged = bytearray(data)
                damaged[pos] ^= 1 << bit
                with open(path, "wb") as f:
                    f.write(damaged)
                with self.subTest(pos=pos, bit=bit):
                    unchecked = 16 <= pos < FILE_HEADER  # creation time and reserved bytes
                    rc, line = self.assert_read_or_refused(path, want_offset=None)
                    if pos >= FILE_HEADER:
                        self.assertEqual(rc, 2, f"a flip at {pos} went unnoticed")
                        m = OFFSET_ERROR.match(line)
                        self.assertIsNotNone(m, line)
                        self.assertLessEqual(int(m["offset"]), pos)
                    elif not unchecked:
                        self.assertEqual(rc, 2, f"a flip at {pos} went unnoticed")
                    detected += rc == 2
        self.assertGreater(detected, len(positions))

    def test_wrong_versions(self):
        for version in (0, 2, 0xFFFFFFFF):
            with self.subTest(version=version):
                path = self.write("v.asp", file_header(version) + self.seed_bytes[FILE_HEADER:])
                _, line = self.assert_read_or_refused(path, want_offset=8)
                self.assertIn(f"unsupported format version {version}", line)
        for size in (0, 63, 4097, 0xFFFFFFFF):
            with self.subTest(header_size=size):
                path = self.write("h.asp", file_header(header_size=size))
                self.assert_read_or_refused(path, want_offset=12)

    def test_foreign_files(self):
        cases = {
            "empty": b"",
            "text": b"hello, world\n" * 10,
            "zeros": bytes(4096),
            "almost magic": b"ALCSCOPF" + bytes(100),
            "random": bytes((i * 7919 + 13) % 256 for i in range(10000)),
            "elf": open(CLI, "rb").read(200000),
            "json": json.dumps({"process": {}}).encode(),
        }
        for name, data in cases.items():
            with self.subTest(file=name):
                _, line = self.assert_read_or_refused(self.write(name.replace(" ", "_"), data))
                self.assertIsNotNone(line, name)
        for path in (self.dir, "/dev/null", os.path.join(self.dir, "missing.asp")):
            with self.subTest(file=path):
                rc, _ = self.assert_read_or_refused(path)
                self.assertEqual(rc, 2)

    def forged(self, *chunks):
        head = self.seed_bytes[:FILE_HEADER]
        first = chunks_of(self.seed_bytes)[:2]  # its Process and Calibration chunks
        body = b"".join(self.seed_bytes[at:at + CHUNK_HEADER + len(p)] for at, _, p in first)
        return head + body + b"".join(chunks)

    def test_forged_counts_and_lengths(self):
        base = len(self.forged())
        cases = {
            "payload size past the limit": (chunk(NOTE, b"", payload_size=0xFFFFFFFF), base),
            "huge row count": (chunk(THREAD_STATS, stats_header(1, 0xFFFFFFFF)), base + CHUNK_HEADER),
            "row count past the payload": (chunk(THREAD_STATS, stats_header(1, 2) + stats_row(0, 10, 1)),
                                           True),
            "huge latency bin count": (chunk(THREAD_STATS, stats_header(1, 1) + stats_row(0, 10, 1, 0xFFFF)),
                                       True),
            "operation out of range": (chunk(THREAD_STATS, stats_header(1, 1) + stats_row(200, 10, 1)), True),
            "huge event count": (chunk(EVENTS, struct.pack("<IIQ", 1, 0xFFFFFFFF, 0)), True),
            "huge string lengths": (chunk(PROCESS, process_info(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                                                                0xFFFFFFFF)), True),
            "unknown libc": (chunk(PROCESS, process_info(0, 0, 0, 0, libc=9)), True),
            "a second Process chunk": (chunk(PROCESS, process_info(0, 0, 0, 0)), True),
            "empty Calibration": (chunk(CALIBRATION, b""), True),
            "short ProcessEnd": (chunk(PROCESS_END, bytes(7)), True),
        }
        for name, (forged, offset) in cases.items():
            for json_output in (True, False):
                with self.subTest(case=name, json=json_output):
                    path = self.write("forged.asp", self.forged(forged))
                    rc, _ = self.assert_read_or_refused(path, want_offset=offset,
                                                        json_output=json_output)
                    self.assertEqual(rc, 2)

    def test_big_but_valid(self):
        note = chunk(NOTE, b"n" * MAX_PAYLOAD)  # the largest chunk there may be
        unknown = chunk(0x7FFF, b"x" * 1000)  # a kind from a newer writer: skipped
        many_threads = b"".join(chunk(THREAD_STATS, stats_header(s, 1) + stats_row(0, 10, s))
                                for s in range(1, 20001))
        many_events = b"".join(chunk(EVENTS, struct.pack("<IIQ", s, 0, 0)) for s in range(1, 50001))
        for name, extra in (("16 MiB note", note), ("unknown kind", unknown),
                            ("20000 threads", many_threads), ("50000 event chunks", many_events)):
            with self.subTest(case=name):
                path = self.write("big.asp", self.forged(extra))
                rc, line = self.assert_read_or_refused(path)
                self.assertEqual(rc, 0, line)
        cut = self.write("cut16.asp", self.forged(chunk(NOTE, b"n" * MAX_PAYLOAD)[:-1]))
        self.assertEqual(self.assert_read_or_refused(cut)[0], 0)  # cut short: reads the rest

    def test_profile_read_while_it_is_written(self):
        out = os.path.join(self.dir, "live.asp")
        env = clean_env({"LD_PRELOAD": SHIM, "ALLOCSCOPE_OUTPUT": out, "ALLOCSCOPE_SAMPLE": "1"})
        proc = subprocess.Popen([torture("fds-glibc"), "busy", "3000"], env=env,
                                stdout=subprocess.DEVNULL)
        reads = 0
        try:
            while proc.poll() is None:
                if os.path.exists(out):
                    self.assertEqual(self.assert_read_or_refused(out)[0], 0)
                    reads += 1
                time.sleep(0.05)
        finally:
            proc.wait()
        # At least two reads of a growing profile, however busy the machine (a read beside two CPU
        # hogs can take most of a second); each was a clean read or refusal.
        self.assertGreaterEqual(reads, 2)
        self.assertTrue(self.dump(out)["process"]["complete"])


if __name__ == "__main__":
    unittest.main()
