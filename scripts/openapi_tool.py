"""Load and save openapi.yaml with the file's layout (block scalars for multi-line text).

Edit the contract either by hand or from Python:

    from openapi_tool import load, save
    doc = load(); doc["paths"][...] = ...; save(doc)

the next build compiles it into the binary (C23 `#embed` in Sources/0-C/CEmbeddedFiles).
"""
import os
import yaml

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "openapi.yaml")


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, value):
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def load(path=PATH):
    with open(path) as f:
        return yaml.safe_load(f)


def save(doc, path=PATH):
    with open(path, "w") as f:
        yaml.dump(doc, f, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
