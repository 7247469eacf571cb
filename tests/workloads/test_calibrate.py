from workloads.calibrate import print_table


def test_print_table_writes_the_knob_then_the_measures(capsys):
    m = {"mean_event_us": 12.345, "events_per_step": 1600.4, "cross_per_step": 99.6,
         "step_ms": 20.0}
    print_table("cost_us", ["mean_event_us", "events_per_step", "cross_per_step"], [(15, m)])
    print_table("entities", ["events_per_step", "cross_per_step", "mean_event_us"], [(900, m)])
    assert capsys.readouterr().out.splitlines() == [
        "| cost_us | mean event µs | events/step | cross-entity/step |",
        "| --- | --- | --- | --- |",
        "| 15 | 12.3 | 1600 | 100 |",
        "| entities | events/step | cross-entity/step | mean event µs |",
        "| --- | --- | --- | --- |",
        "| 900 | 1600 | 100 | 12.3 |",
    ]
