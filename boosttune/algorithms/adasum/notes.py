"""The adasum method card's text: what the code does in MindSpore 2.10, read from its source (not measured)."""

from boosttune.algorithms.base import MethodNote

NOTE = MethodNote(
    key="adasum",
    title="AdaSum",
    what=(
        "The switch only sets `optimizer.adasum = True`. `BoostTrainOneStepCell.check_adasum_enable` "
        "then activates AdaSum only if there is a distributed gradient reducer (data or hybrid "
        "parallel) and `get_group_size() // 8`, a hard-coded 8 rather than `common.device_number`, is "
        "a power of two above 1: 16, 32, 64… ranks. Otherwise nothing changes, so on a single device "
        "the O2 preset trains exactly like O1.\n\n"
        "When active, ranks form servers of `device_number` ranks. Gradients are all-reduced only "
        "inside a server; each rank runs the optimizer, takes its slice of the parameters (split into "
        "`device_number` contiguous slices) and forms the weight delta against the previous weights. "
        "`AdaSum` merges deltas across servers in log2(servers) recursive-halving rounds of HCCL "
        "Send/Receive, combining halves a and b as (1 − a·b/2‖a‖²)·a + (1 − a·b/2‖b‖²)·b with the dot "
        "products all-reduced; each slice is then broadcast inside its server."
    ),
    knobs=(
        ("boost.adasum", "The switch. On in the O2 preset only."),
        ("common.device_number",
         "Ranks per server: server size and number of parameter slices. Default 8. The enable check "
         "still divides the world size by a hard-coded 8."),
    ),
    devices=(
        "AdaSum states no platform, but it communicates over hccl_world_group (Ascend's HCCL) and needs "
        "at least 16 ranks; AutoBoost lists only Ascend."
    ),
    source=(
        "mindspore/boost/adasum.py: AdaSum, _adasum_opt_forward_process, _send_recv_res",
        "mindspore/boost/boost_cell_wrapper.py: BoostTrainOneStepCell.check_adasum_enable, "
        "__init_adasum, adasum_process",
        "mindspore/boost/boost.py: AutoBoost.network_auto_process_train",
    ),
    algorithms=("adasum",),
)
