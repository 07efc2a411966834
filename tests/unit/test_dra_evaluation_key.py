"""The DRA import evaluates each selector once per group of devices alike in everything the selectors
read (``Selector.reads``, ``evaluation_key``); a selector whose reads are not plain from its text makes
every device its own group. The grouped import gives the same devices the same signatures."""

from __future__ import annotations

from planner.adapters.kubernetes_dra_cel import Selector, device_variable, evaluation_key
from tests.support.dra_lists import edited, fleet, imported, items_of

D = "gpu.nvidia.com"


def test_reads_are_the_fields_an_expression_selects_by_literal_names():
    sel = Selector(f'device.driver == "{D}" && device.attributes["{D}"].type == "gpu" && device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0', "x")
    assert sel.reads == {("driver",), ("attributes", D, "type"), ("capacity", D, "memory")}
    assert Selector(f"has(device.attributes['{D}'].profile)", "x").reads == {("attributes", D, "profile")}


def test_reads_are_unknown_when_a_map_is_used_whole_or_indexed_at_run_time():
    for expression in (
        f'device.attributes["{D}"]["uu" + "id"] == "GPU-1"',
        f'size(device.attributes["{D}"]) > 3',
        f'"uuid" in device.attributes["{D}"]',
        f'device.attributes["{D}"] == {{"type": "gpu"}}',
        'device.attributes["a\\"b"].x == 1',
    ):
        assert Selector(expression, "x").reads is None, expression


def test_keys_tell_apart_what_a_selector_reads_and_only_that():
    reads = Selector(f'device.attributes["{D}"].flag == true', "x").reads
    one = device_variable(D, "gpu-0", {"flag": True, "uuid": "GPU-a"}, {}, False)
    two = device_variable(D, "gpu-1", {"flag": True, "uuid": "GPU-b"}, {}, False)
    as_int = device_variable(D, "gpu-2", {"flag": 1, "uuid": "GPU-c"}, {}, False)
    missing = device_variable(D, "gpu-3", {"uuid": "GPU-d"}, {}, False)
    other_domain = device_variable("other.com", "gpu-4", {"flag": True}, {}, False)
    keys = [evaluation_key(d, reads) for d in (one, two, as_int, missing, other_domain)]
    assert keys[0] == keys[1] and len({keys[1], keys[2], keys[3]}) == 3
    assert keys[3] == keys[4]  # no such attribute, or no such domain: reading it fails alike
    assert evaluation_key(one, None) != evaluation_key(two, None)


def test_a_selector_on_a_per_device_attribute_is_evaluated_on_every_device():
    doc = edited(fleet(10, 3))
    uuid = "GPU-node-00000-5"
    template = next(t for t in items_of(doc, "ResourceClaimTemplate") if t["metadata"]["name"] == "any-gpu")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": f'device.attributes["{D}"].uuid == "{uuid}"'}}]
    by_run_time_index = edited(doc)
    by_run_time_index_template = next(t for t in items_of(by_run_time_index, "ResourceClaimTemplate") if t["metadata"]["name"] == "any-gpu")
    by_run_time_index_template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": f'device.attributes["{D}"]["uu" + "id"] == "{uuid}"'}}
    ]
    for d in (doc, by_run_time_index):
        node = next(n for n in imported(d).cluster.nodes if n.name == "node-00000")
        serving = [dev.name for dev in node.devices if len(dev.serves) > len(node.devices[0].serves)]
        assert serving == ["gpu-5"], serving
