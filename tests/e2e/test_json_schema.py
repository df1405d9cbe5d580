"""Every command's JSON, validated against its JSON Schema in docs/schema/ (docs/json.md).

The profiles cover what changes the documents: sampled runs under glibc and musl (one with call
stacks), traces with call stacks, a profile recorded with --sample 0, a trace of every entry point of the
allocator (tests/targets/alloc_family.c), contended lock waits recorded with --locks on both libcs
(tests/targets/lock_contention.c), and a C11 mutex and a spin lock (tests/targets/lock_kinds.c).  The schemas forbid keys they do not describe
("additionalProperties": false), so a key added without its description fails here; every
property of every schema must carry a description.  Beyond the schemas: each document's first
key is `schema`, and every duration (a key ending in _ns) is an integer.
"""
import json
import os
import subprocess
import unittest

from allocscope_e2e import CLI, E2ETestCase, target

try:
    import jsonschema
except ImportError:  # python3-jsonschema, installed by scripts/install-deps
    jsonschema = None

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "schema")


def load_schema(name):
    with open(os.path.join(SCHEMAS, f"{name}.json")) as f:
        return json.load(f)


def undescribed(schema, path=""):
    """Paths of the properties (and map values, array items) without a description."""
    missing = []
    for key, sub in schema.get("properties", {}).items():
        if "description" not in sub:
            missing.append(f"{path}/{key}")
        missing += undescribed(sub, f"{path}/{key}")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        if "description" not in extra:
            missing.append(f"{path}/*")
        missing += undescribed(extra, f"{path}/*")
    if isinstance(schema.get("items"), dict) and schema["items"]:
        if "description" not in schema["items"]:
            missing.append(f"{path}/[]")
        missing += undescribed(schema["items"], f"{path}/[]")
    return missing


def non_integer_durations(value, path=""):
    bad = []
    if isinstance(value, dict):
        for key, sub in value.items():
            if key.endswith("_ns") and sub is not None and not isinstance(sub, (int, list, dict)):
                bad.append(f"{path}/{key}")
            if key.endswith("_ns") and isinstance(sub, list):
                bad += [f"{path}/{key}[]" for x in sub if not isinstance(x, int)]
            bad += non_integer_durations(sub, f"{path}/{key}")
    elif isinstance(value, list):
        for sub in value:
            bad += non_integer_durations(sub, path + "/[]")
    return bad


@unittest.skipIf(jsonschema is None, "python3-jsonschema is not installed (scripts/install-deps)")
class JsonSchemas(E2ETestCase):
    @classmethod
    def setUpClass(cls):
        cls.shared = E2ETestCase("run")
        cls.shared.setUp()
        d = cls.shared.dir
        cls.p = {}
        recordings = {
            "glibc": (["--sample", "16"], "harness-glibc", ["2", "30000"]),
            "musl": (["--sample", "16"], "harness-musl", ["2", "30000"]),
            "trace": (["--trace", "--stacks"], "harness-glibc", ["2", "30000"]),
            "trace-musl": (["--trace", "--stacks"], "harness-musl", ["2", "30000"]),
            "stacks": (["--stacks=4", "--sample", "4"], "harness-glibc", ["2", "20000"]),
            "counted": (["--sample", "0"], "harness-glibc", ["1", "2000"]),
            # A trace with no timed call: what a short trace timed in windows can be.
            "trace-untimed": (["--trace", "--sample", "0"], "harness-glibc", ["2", "3000"]),
            "family": (["--trace", "--stacks=1", "--sample", "1"], "alloc_family-glibc", []),
            "locks": (["--locks"], "lock_contention-glibc", ["4", "60", "200"]),
            "locks-musl": (["--locks"], "lock_contention-musl", ["4", "60", "200"]),
            # C11's mutex and a spin lock (kind "spinlock"), behind a C11 condition.
            "lock-kinds": (["--locks"], "lock_kinds-glibc", ["4", "40", "100"]),
        }
        for name, (options, program, args) in recordings.items():
            path = os.path.join(d, f"{name}.asp")
            proc = subprocess.run([CLI, "record", *options, "-o", path, "--", target(program), *args],
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise AssertionError(f"recording {name}: {proc.stderr}")
            cls.p[name] = path

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def documents(self, *args):
        proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=900)
        self.assertEqual(proc.returncode, 0, f"{args}: {proc.stderr}")
        doc = json.loads(proc.stdout)
        # The same text read as lists of keys, in order (objects nested inside become lists too).
        keys = json.loads(proc.stdout, object_pairs_hook=lambda pairs: [k for k, _ in pairs])
        return doc, keys

    def check(self, schema_name, *args):
        schema = load_schema(schema_name)
        jsonschema.Draft202012Validator.check_schema(schema)
        self.assertEqual(undescribed(schema), [], f"{schema_name}: properties without a description")
        doc, keys = self.documents(*args)
        docs, keys = (doc, keys) if isinstance(doc, list) else ([doc], [keys])
        for d, k in zip(docs, keys):
            self.assertEqual(k[0], "schema", args)
            self.assertEqual(d["schema"], schema["properties"]["schema"]["const"])
            errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(d), key=lambda e: list(e.path))
            self.assertEqual([f"{list(e.path)}: {e.message}" for e in errors][:10], [], args)
            self.assertEqual(non_integer_durations(d), [], args)
        return docs

    def test_report(self):
        for name in ("glibc", "musl", "trace", "trace-untimed", "stacks", "counted", "family", "locks", "locks-musl",
                     "lock-kinds"):
            for by in ("class", "bucket", "thread", "shape", "callsite"):
                with self.subTest(profile=name, by=by):
                    self.check("report", "report", "--json", "--by", by, self.p[name])
        with self.subTest(several=True):
            docs = self.check("report", "report", "--json", self.p["glibc"], self.p["trace"])
            self.assertEqual(len(docs), 2)

    def test_diff(self):
        for base, other in (("glibc", "musl"), ("trace", "trace-musl"), ("glibc", "counted"), ("trace", "family"),
                            ("locks", "locks-musl"), ("glibc", "locks"),
                            ("trace-untimed", "trace")):
            with self.subTest(base=base, other=other):
                self.check("diff", "diff", "--json", self.p[base], self.p[other])

    def test_shapes_callsites_dump(self):
        for name in self.p:
            with self.subTest(profile=name):
                self.check("shapes", "shapes", "--json", self.p[name])
                self.check("callsites", "callsites", "--json", self.p[name])
                self.check("dump", "dump", "--json", self.p[name])
        self.check("shapes-gap", "shapes", "--json", self.p["trace"], self.p["trace-musl"])
        self.check("shapes-gap", "shapes", "--json", self.p["family"], self.p["trace"])
        self.check("shapes-gap", "shapes", "--json", self.p["trace-untimed"], self.p["trace"])

    def test_compare(self):
        self.check("compare", "compare", "--json", "--runs", "2", "--sample", "16", "--allocators",
                   "glibc,jemalloc", "--variant", f"musl={target('harness-musl')}", "--",
                   target("harness-glibc"), "2", "20000")
        with self.subTest(locks=True):
            self.check("compare", "compare", "--json", "--runs", "1", "--locks", "--allocators", "glibc",
                       "--variant", f"musl={target('lock_contention-musl')}", "--",
                       target("lock_contention-glibc"), "4", "60", "200")


if __name__ == "__main__":
    unittest.main()
