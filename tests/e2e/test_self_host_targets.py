"""scripts/self-host builds a subset of the tree by target name; every name it uses by default is a
target this build knows, so a renamed library or moved source fails here, not only in the long
self-hosted build."""
import importlib.machinery
import importlib.util
import os
import subprocess
import unittest

from allocscope_e2e import BUILD

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "self-host")


def self_host_module():
    loader = importlib.machinery.SourceFileLoader("self_host", SCRIPT)
    spec = importlib.util.spec_from_loader("self_host", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class SelfHostTargets(unittest.TestCase):
    def test_every_default_target_is_known_to_the_build(self):
        targets = self_host_module().DEFAULT_TARGETS
        self.assertGreater(len(targets), 1)
        unknown = [t for t in targets
                   if subprocess.run(["ninja", "-C", BUILD, "-t", "query", t],
                                     capture_output=True).returncode != 0]
        self.assertEqual(unknown, [])

    def test_a_wrong_name_is_caught(self):
        proc = subprocess.run(["ninja", "-C", BUILD, "-t", "query", "analyzer/no_such_object.cpp.o"],
                              capture_output=True)
        self.assertNotEqual(proc.returncode, 0)


if __name__ == "__main__":
    unittest.main()
