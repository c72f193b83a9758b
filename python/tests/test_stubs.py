"""The type stubs (prefixsim/_native.pyi) name what the extension module has, with the same
parameters, so an editor completes what exists; the package ships them with py.typed."""

import ast
import inspect
from pathlib import Path

import prefixsim
from prefixsim import _native

STUB = Path(prefixsim.__file__).with_name("_native.pyi")


def stub_tree():
    return ast.parse(STUB.read_text())


def params(node):
    return [a.arg for a in node.args.args if a.arg != "self"]


def test_the_stubs_and_the_marker_ship():
    assert STUB.is_file() and STUB.with_name("py.typed").is_file()


def test_every_function_and_method_with_its_parameters():
    tree = stub_tree()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            f = getattr(_native, node.name)
            assert list(inspect.signature(f).parameters) == params(node), node.name
        if isinstance(node, ast.ClassDef):
            cls = getattr(_native, node.name)
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                assert hasattr(cls, item.name), f"{node.name}.{item.name}"
                member = inspect.getattr_static(cls, item.name)
                if callable(member) and not item.name.startswith("__"):
                    sig = inspect.signature(getattr(cls, item.name))
                    got = [p for p in sig.parameters if p != "self"]
                    assert got == params(item), f"{node.name}.{item.name}"


def test_nothing_public_is_missing_from_the_stubs():
    tree = stub_tree()
    named = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    named |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in dir(_native) if not n.startswith("_")}
    assert public <= named | {"Progress"}, public - named
    for cls in [_native.Experiment, _native.RunResult, _native.Histogram]:
        stub = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
        members = {i.name for i in stub.body if isinstance(i, ast.FunctionDef)}
        mine = {n for n in vars(cls) if not n.startswith("_")}
        assert mine <= members, f"{cls.__name__}: {mine - members}"
