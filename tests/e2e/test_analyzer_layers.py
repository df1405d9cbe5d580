"""The analyzer keeps its layer rule (analyzer/README.md) in every #include line, and the checker
(analyzer_layers.py) finds each way of breaking it: it is run on the real tree, and on copies of
it with one violation each."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import analyzer_layers

SOURCE = analyzer_layers.SOURCE
ANALYZER = os.path.join(SOURCE, "analyzer")
CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analyzer_layers.py")


class TheTree(unittest.TestCase):
    def test_every_include_keeps_the_rule(self):
        self.assertEqual(list(analyzer_layers.violations(ANALYZER)), [])

    def test_the_rule_names_every_layer_folder(self):
        may_include, private = analyzer_layers.read_rule(ANALYZER)
        folders = {name for name in os.listdir(ANALYZER) if os.path.isdir(os.path.join(ANALYZER, name))}
        self.assertEqual(set(may_include), folders)
        # render, export and run never include each other; only commands includes commands.
        for a in ("render", "export", "run"):
            for b in ("render", "export", "run"):
                if a != b:
                    self.assertNotIn(b, may_include[a])
        self.assertEqual([f for f, allowed in may_include.items() if "commands" in allowed], [])
        self.assertEqual(private["profile/chunk_records.h"], {"profile"})
        self.assertNotIn("model", private["util/json_writer.h"])

    def test_the_command_line_checker_passes_the_tree(self):
        proc = subprocess.run([sys.executable, CHECKER], capture_output=True, text=True)
        self.assertEqual((proc.returncode, proc.stdout, proc.stderr), (0, "", ""))


class Violations(unittest.TestCase):
    """A copy of analyzer/ (README.md and sources) with one line changed: the checker names it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="allocscope-layers-")
        self.analyzer = os.path.join(self.dir, "analyzer")
        shutil.copytree(ANALYZER, self.analyzer)
        shutil.copytree(os.path.join(SOURCE, "include"), os.path.join(self.dir, "include"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def add_include(self, relpath, include):
        """Adds `#include "include"` after the first include of analyzer/relpath; returns its line."""
        path = os.path.join(self.analyzer, relpath)
        with open(path) as f:
            lines = f.read().split("\n")
        at = next(i for i, line in enumerate(lines) if line.startswith("#include")) + 1
        lines.insert(at, f'#include "{include}"')
        with open(path, "w") as f:
            f.write("\n".join(lines))
        return at + 1

    def found(self):
        return list(analyzer_layers.violations(self.analyzer, os.path.join(self.dir, "include")))

    def assert_one(self, relpath, line, include, why):
        self.assertEqual(self.found(), [f'analyzer/{relpath}:{line}: #include "{include}": {why}'])

    def test_the_copy_is_clean(self):
        self.assertEqual(self.found(), [])

    def test_a_lower_layer_including_a_higher_one(self):
        line = self.add_include("model/diff.cpp", "render/report.h")
        self.assert_one("model/diff.cpp", line, "render/report.h",
                        "model/ may include profile/, symbols/, util/")

    def test_util_including_anything(self):
        line = self.add_include("util/units.h", "profile/stats.h")
        self.assert_one("util/units.h", line, "profile/stats.h", "util/ may include nothing but itself")

    def test_render_export_and_run_including_each_other(self):
        for relpath, include in (("render/report_text.cpp", "export/export.h"),
                                 ("export/export_folded.cpp", "run/record.h"),
                                 ("run/compare.cpp", "render/html_page.h")):
            with self.subTest(relpath=relpath):
                self.tearDown()
                self.setUp()
                line = self.add_include(relpath, include)
                found = self.found()
                self.assertEqual(len(found), 1, found)
                self.assertTrue(found[0].startswith(f'analyzer/{relpath}:{line}: #include "{include}": '), found)

    def test_the_command_line_outside_commands(self):
        line = self.add_include("model/shapes.h", "commands/cli.h")
        self.assert_one("model/shapes.h", line, "commands/cli.h",
                        "model/ may include profile/, symbols/, util/")

    def test_chunks_outside_profile(self):
        line = self.add_include("model/cost_model.cpp", "profile/profile_reader.h")
        self.assert_one("model/cost_model.cpp", line, "profile/profile_reader.h",
                        "profile/profile_reader.h is private to profile/")

    def test_a_writer_in_the_model(self):
        line = self.add_include("model/shapes.cpp", "util/json_writer.h")
        self.assert_one("model/shapes.cpp", line, "util/json_writer.h",
                        "util/json_writer.h is private to commands/, export/, render/, util/")

    def test_a_header_named_without_its_folder(self):
        line = self.add_include("render/report_text.cpp", "cost_model.h")
        self.assert_one("render/report_text.cpp", line, "cost_model.h", "name the header as folder/file.h")
        self.tearDown()
        self.setUp()
        line = self.add_include("render/report_text.cpp", "../model/cost_model.h")
        self.assert_one("render/report_text.cpp", line, "../model/cost_model.h", "name the header as folder/file.h")

    def test_a_header_that_does_not_exist(self):
        line = self.add_include("model/diff.cpp", "model/no_such_header.h")
        self.assert_one("model/diff.cpp", line, "model/no_such_header.h", "no such header")

    def test_a_file_outside_the_layers(self):
        with open(os.path.join(self.analyzer, "loose.cpp"), "w") as f:
            f.write('#include "model/cost_model.h"\n')
        os.mkdir(os.path.join(self.analyzer, "misc"))
        self.assertEqual(self.found(), ["analyzer/loose.cpp: a file outside the layer folders",
                                        "analyzer/misc/: a folder the layer table does not name"])

    def test_the_rule_is_read_from_the_readme(self):
        # Opening render/ to run/ in the README's table makes such an include legal...
        readme = os.path.join(self.analyzer, "README.md")
        with open(readme) as f:
            text = f.read()
        row = "| `render/` |"
        start = text.index(row)
        end = text.index("\n", start)
        cells = text[start:end].split("|")
        cells[3] = cells[3].rstrip() + ", `run/` "
        with open(readme, "w") as f:
            f.write(text[:start] + "|".join(cells) + text[end:])
        self.add_include("render/report_text.cpp", "run/record.h")
        self.assertEqual(self.found(), [])
        # ...and a README without the table is an error, not a pass.
        with open(readme, "w") as f:
            f.write("# The analyzer\n")
        with self.assertRaises(analyzer_layers.RuleError):
            self.found()

    def test_the_command_line_checker_fails(self):
        line = self.add_include("model/diff.cpp", "render/report.h")
        proc = subprocess.run([sys.executable, CHECKER, self.analyzer], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(proc.stdout.splitlines(),
                         [f'analyzer/model/diff.cpp:{line}: #include "render/report.h": '
                          "model/ may include profile/, symbols/, util/"])


if __name__ == "__main__":
    unittest.main()
