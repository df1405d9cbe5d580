"""Golden outputs of `allocscope report` on a small recorded profile (tests/golden/).

The profile was recorded once (harness-glibc, 2 threads, 20,000 iterations, --sample 16); the
expected outputs are the report's text and JSON on it, byte for byte. After an intended change of
the report, or of the profile format, run tests/golden/refresh and review the difference.
"""
import os
import subprocess
import unittest

from allocscope_e2e import CLI

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")
PROFILE = "harness-glibc-2.asp"
CASES = [
    ("report.txt", []),
    ("report.json", ["--json"]),
    ("report-by-thread.txt", ["--by", "thread"]),
    ("report-by-bucket.json", ["--json", "--by", "bucket"]),
]


class Golden(unittest.TestCase):
    def test_outputs_match(self):
        for expected_file, options in CASES:
            with self.subTest(expected=expected_file):
                proc = subprocess.run([CLI, "report", *options, PROFILE], capture_output=True, text=True,
                                      cwd=GOLDEN)
                self.assertEqual(proc.returncode, 0,
                                 f"{proc.stderr}\n(if the profile format changed, run tests/golden/refresh)")
                with open(os.path.join(GOLDEN, expected_file), encoding="utf-8") as f:
                    expected = f.read()
                self.maxDiff = None
                self.assertEqual(proc.stdout, expected,
                                 "report output changed: if intended, run tests/golden/refresh and review")


if __name__ == "__main__":
    unittest.main()
