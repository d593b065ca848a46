#!/usr/bin/env python3
"""redis-command-json.py REDIS_CHECKOUT TAG [OUT]

Writes what a Redis release's src/commands/*.json (at git TAG of a
redis/redis checkout) make COMMAND INFO and COMMAND DOCS answer for the
commands memgest serves, in the shape scripts/redis-command-golden.sh
writes a live server's answers: OUT defaults to
server/resp/testdata/redis-source-commands.json. memgest's command table
transcribes 7.2.6's files (run it with TAG 7.2.6);
TestCommandTableAgainstRedis compares the table with this file, and with
a live Redis 7.0's answers where the two agree. Run on 7.0.15 it gives
exactly what redis-server 7.0.15 answers, which checks the rendering.

The command names are NAMES of scripts/redis-command-golden.sh. Flags,
ACL categories and key specs are rendered as Redis's commands.c does
(addReplyCommandInfo): hidden flags dropped, categories implied by flags
added, key spec flags in Redis's case. Argument descriptions are dropped.
"""
import json
import os
import re
import subprocess
import sys

# Flags COMMAND INFO leaves out (server.c addReplyFlagsForCommand: "Hidden on purpose").
HIDDEN_FLAGS = {"MAY_REPLICATE", "SENTINEL", "ONLY_SENTINEL", "PROTECTED", "TOUCHES_ARBITRARY_KEYS"}


def names():
    script = open(os.path.join(os.path.dirname(__file__), "redis-command-golden.sh")).read()
    return re.search(r'NAMES="(.*?)"', script, re.S).group(1).split()


def files(checkout, tag):
    out = subprocess.run(["git", "-C", checkout, "ls-tree", "--name-only", tag, "src/commands/"],
                         check=True, capture_output=True, text=True).stdout.split()
    for path in out:
        if path.endswith(".json"):
            text = subprocess.run(["git", "-C", checkout, "show", f"{tag}:{path}"],
                                  check=True, capture_output=True, text=True).stdout
            (name, cmd), = json.loads(text).items()
            yield name.lower(), cmd


def acl(flags, explicit):
    cats = {c.lower() for c in explicit}
    implied = {"WRITE": "write", "ADMIN": "admin", "PUBSUB": "pubsub", "FAST": "fast", "BLOCKING": "blocking"}
    for f, c in implied.items():
        if f in flags:
            cats.add(c)
    if "READONLY" in flags and "scripting" not in cats:
        cats.add("read")
    if "ADMIN" in flags:
        cats.add("dangerous")
    if "fast" not in cats:
        cats.add("slow")
    return ["@" + c for c in sorted(cats)]


def key_spec(ks):
    out = {"flags": [f if f in ("RO", "RW", "OW", "RM") else f.lower() for f in ks.get("flags", [])]}
    if "notes" in ks:
        out["notes"] = ks["notes"]
    (bt, bs), = ks["begin_search"].items()
    out["begin_search"] = {"type": bt, "spec": {"index": bs["pos"]} if bt == "index" else bs}
    (ft, fs), = ks["find_keys"].items()
    if ft == "range":
        fs = {"lastkey": fs["lastkey"], "keystep": fs["step"], "limit": fs["limit"]}
    elif ft == "keynum":
        fs = {"keynumidx": fs["keynumidx"], "firstkey": fs["firstkey"], "keystep": fs["step"]}
    out["find_keys"] = {"type": ft, "spec": fs}
    return out


def legacy_range(specs):
    """The first, last and step of COMMAND INFO: the index/range key specs
    merged while each begins right after the last (server.c
    populateCommandLegacyRangeSpec)."""
    first = last = step = 0
    for k in specs:
        if "index" not in k["begin_search"] or "range" not in k["find_keys"]:
            continue
        pos, r = k["begin_search"]["index"]["pos"], k["find_keys"]["range"]
        end = r["lastkey"] if r["lastkey"] < 0 else pos + r["lastkey"]
        if first == 0:
            first, last, step = pos, end, r["step"]
        elif step == 1 and r["step"] == 1 and 0 <= last and pos == last + 1:
            last = end
        else:
            break
    return first, last, step


def info(full, cmd, subs):
    flags = cmd.get("command_flags", [])
    specs = cmd.get("key_specs", [])
    shown = [f.lower() for f in flags if f not in HIDDEN_FLAGS]
    if any("index" not in k["begin_search"] or "range" not in k["find_keys"] for k in specs):
        shown.append("movablekeys")
    first, last, step = legacy_range(specs)
    return [full, cmd["arity"], shown, first, last, step, acl(flags, cmd.get("acl_categories", [])),
            [t.lower() for t in cmd.get("command_tips", [])], [key_spec(k) for k in specs], subs]


def docs(cmd, subs):
    d = {k: cmd[k] for k in ("summary", "since", "group", "complexity", "deprecated_since", "replaced_by") if k in cmd}
    if "doc_flags" in cmd:
        d["doc_flags"] = [f.lower() for f in cmd["doc_flags"]]
    if cmd.get("history"):
        d["history"] = [list(h) for h in cmd["history"]]
    if subs:
        d["subcommands"] = subs
    return d


def main():
    checkout, tag = sys.argv[1], sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else "server/resp/testdata/redis-source-commands.json"
    tops, subs = {}, {}
    for name, cmd in files(checkout, tag):
        if "container" in cmd:
            subs.setdefault(cmd["container"].lower(), {})[f'{cmd["container"].lower()}|{name}'] = cmd
        else:
            tops[name] = cmd
    wanted = names()
    golden = {"redis_version": tag, "info": {}, "docs": {},
              "command_list": sorted(list(tops) + [s for c in subs.values() for s in c])}
    for name in wanted:
        if name not in tops:
            continue
        own = sorted(subs.get(name, {}).items())
        golden["info"][name] = info(name, tops[name], [info(s, c, []) for s, c in own])
        golden["docs"][name] = docs(tops[name], {s: docs(c, {}) for s, c in own})
    with open(out, "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {out} from {tag}'s src/commands")


main()
