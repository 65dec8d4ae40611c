#!/usr/bin/env python3
"""Instructions per write from callgrind dumps of one `fleetd` (instructions_per_write.sh).

Sums the dumps taken while the row ran at full pace (those in which the node applied
at least 80% as many entries as in the busiest), divides by the entries applied in
them, and prints the total and the functions that cost the most, by their own
instructions and with what they call.

    instructions_per_write.py DUMP... [--top N]
"""
import collections
import sys

APPLY = "fleet_node::store::state_machine_store::StateMachineStore::apply_entry"


def read_dump(path):
    """Own instructions per function, and (caller, callee) -> (calls, instructions)."""
    own = collections.Counter()
    edges = collections.defaultdict(lambda: [0, 0])
    names, function, callee, calls = {}, None, None, None

    def name(field):
        number, _, text = field.partition(" ")
        if text:
            names[number] = text
        return names.get(number, number)

    with open(path, errors="replace") as dump:
        for line in dump:
            if line.startswith("fn="):
                function = name(line[3:].strip())
            elif line.startswith("cfn="):
                callee = name(line[4:].strip())
            elif line.startswith("calls="):
                calls = int(line[6:].split()[0])
            elif line[:1].isdigit() or line[:1] in ("+", "-", "*"):
                fields = line.split()
                if len(fields) < 2:
                    continue
                if calls is None:
                    own[function] += int(fields[-1])
                else:
                    edges[(function, callee)][0] += calls
                    edges[(function, callee)][1] += int(fields[-1])
                    calls = None
    return own, edges


def main():
    args = sys.argv[1:]
    top = 25
    if "--top" in args:
        at = args.index("--top")
        top = int(args[at + 1])
        del args[at : at + 2]
    dumps = []
    for path in args:
        own, edges = read_dump(path)
        applied = sum(calls for (_, callee), (calls, _) in edges.items() if callee == APPLY)
        dumps.append((applied, own, edges))
    busiest = max(applied for applied, _, _ in dumps)
    if busiest == 0:
        sys.exit("no dump holds an applied entry: was the row too short?")
    own, calls, inclusive = collections.Counter(), collections.Counter(), collections.Counter()
    kept = writes = 0
    for applied, dump_own, dump_edges in dumps:
        if applied < 0.8 * busiest:
            continue
        kept += 1
        writes += applied
        own.update(dump_own)
        for (caller, callee), (count, cost) in dump_edges.items():
            calls[callee] += count
            if caller != callee:
                inclusive[callee] += cost
    print(f"{kept} dumps of {len(dumps)}, {writes} entries applied, "
          f"{sum(own.values()) // writes} instructions per write")
    for title, table in (("own", own), ("with what they call", inclusive)):
        print(f"-- per write, {title}: instructions, calls, function")
        for function, cost in table.most_common(top):
            print(f"{cost // writes:9} {calls[function] / writes:7.1f}  {function[:150]}")


if __name__ == "__main__":
    main()
