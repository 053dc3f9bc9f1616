#!/usr/bin/env python3
"""analysis/plots/report.py (`dtnn report`) and the small analysis scripts on the stores and inputs that broke
them, each a database of the store's real schema (analysis_db.new_db) with made-up rows:

1. Per-layer timings pool runs by the batch per rank (the report's options.batch_size), not runs.batch_size,
   which is the global batch of a strong-scaling run: a weak run at 512 per rank and a strong run at 512
   global (256 per rank) are two tables, each with its own median.
2. The accuracy table tells apart configurations that differ only in a parameter it has no column for (the
   trial label, as the throughput table does).
3. Targets on the accuracy chart: those v_accuracy_vs_target matched to a plotted run, none on a chart of
   training accuracy (Report.matching_targets).
4. Predicted curves with no measured configuration (a profile from a file: NULL environment) are shown in a
   table of their own, not dropped.
5. A conv benchmark whose model name holds '../' is drawn inside --out (file_part), and the report is written.
6. Labels with '$' (matplotlib's mathtext) do not fail the report.
7. v_comm rows of zero steps (step_ms NULL) or zero step time do not fail the report.
8. The run status table counts diverged runs.
9. analysis/allreduce_fit.py: an Iallreduce sweep without Allreduce's smallest size gives its own latency.
10. experiments/gpu_profile_summary.py: convertTensor is a copy, cuDNN's scudnn kernels are convolutions.
11. A study over nodes at ranks_per_node = 2 (ranks 2, 4, 8; never 1 rank) has scaling rows, against its
    fewest ranks (v_scaling since migration 17, and report_data's copy of it for --matrix); an ok run without
    samples/s is not counted in `runs`.
12. Image lines: an alt text with '[', ']' or '\\' (a trial label) is escaped, a file name with spaces goes in <>.

  test_report_edges.py DTNN SOURCE_DIR WORK
Prints every check; exits 1 on any mismatch.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import analysis_db as adb  # noqa: E402  (check, new_db, add_run, add_epoch, add_comm)

check = adb.check


def report(source, db, out):
    """(exit status, stderr, report.md text or '')."""
    p = subprocess.run(["/usr/bin/python3", os.path.join(source, "analysis", "plots", "report.py"), "--db", db,
                        "--out", out], capture_output=True, text=True)
    md = os.path.join(out, "report.md")
    return p.returncode, p.stderr, open(md).read() if os.path.exists(md) else ""


def section(md, heading):
    return md.split(heading, 1)[1].split("\n## ", 1)[0] if heading in md else ""


def layer_pooling_and_accuracy_rows(dtnn, source, work):
    print("\n== 1, 2: per-layer pooling by the batch per rank; accuracy rows told apart ==")
    db = os.path.join(work, "layers.db")
    con = adb.new_db(dtnn, db, work)
    weak = adb.add_run(con, {"model": "simplemlp", "ranks": 2, "batch_size": 512, "scaling": "weak"},
                       test_accuracy=83.9, report=json.dumps({"options": {"batch_size": 512}}))
    strong = adb.add_run(con, {"model": "simplemlp", "ranks": 2, "batch_size": 512, "scaling": "strong"},
                         test_accuracy=82.85, report=json.dumps({"options": {"batch_size": 256}}))
    con.execute("UPDATE runs SET label = 'scaling=weak' WHERE id = ?", (weak,))
    con.execute("UPDATE runs SET label = 'scaling=strong' WHERE id = ?", (strong,))
    for run_id, fwd in ((weak, 8.0), (strong, 4.0)):
        con.execute("INSERT INTO layer_timings (run_id, layer_id, type, output_shape, params, forward_ms, "
                    "backward_ms) VALUES (?, 2, 'FC', '(512,)', 401920, ?, 1.0)", (run_id, fwd))
    con.commit()
    con.close()
    rc, err, md = report(source, db, os.path.join(work, "out_layers"))
    check("layers: report exit status", (rc, err), (0, ""))
    layers = section(md, "## Per-layer timings")
    blocks = {}
    for block in layers.split("\nframework ")[1:]:
        desc, rest = block.split("\n", 1)
        fc = next((l for l in rest.splitlines() if l.startswith("| 2 | FC |")), "")
        blocks["batch per rank 512" in desc, "batch per rank 256" in desc] = fc.split("|")[8].strip() if fc else None
    check("layers: one table per batch per rank, with its own forward ms",
          blocks, {(True, False): "8.000", (False, True): "4.000"})
    acc = section(md, "## Accuracy")
    rows = sorted(l for l in acc.splitlines() if l.startswith("| dtnn |"))
    check("accuracy table: rows named by their trial", rows,
          ["| dtnn | scaling=strong | 1 | 1 | 82.85 | 82.85 | 82.85 | - | - |",
           "| dtnn | scaling=weak | 1 | 1 | 83.90 | 83.90 | 83.90 | - | - |"])


def chart_targets(source):
    print("\n== 3: targets on the accuracy chart ==")
    sys.path.insert(0, os.path.join(source, "analysis", "plots"))
    import report as rp  # noqa: E402
    groups = [{"runs": [{"id": 1}, {"id": 2}]}]
    judged = [{"run_id": 1, "metric": "test_accuracy", "target": 90.5, "source": "chapter"},
              {"run_id": 2, "metric": "test_accuracy", "target": 90.5, "source": "chapter"},  # the same target
              {"run_id": 3, "metric": "test_accuracy", "target": 99.0, "source": "other run"},  # not plotted
              {"run_id": 2, "metric": "val_accuracy", "target": 88.0, "source": ""}]
    check("validation curves: the matched targets, once each",
          rp.Report.matching_targets(judged, groups, ["val"]),
          [("target val_accuracy 88%", 88.0), ("target test_accuracy 90.5% (chapter)", 90.5)])
    check("training-accuracy curves: no target", rp.Report.matching_targets(judged, groups, ["val", "train"]), [])
    check("no judged pair: no target", rp.Report.matching_targets([], groups, ["val"]), [])


def orphan_predictions(dtnn, source, work):
    print("\n== 4: predictions without a measured configuration ==")
    db = os.path.join(work, "pred.db")
    con = adb.new_db(dtnn, db, work)
    adb.add_run(con, {"model": "simplemlp", "ranks": 1})
    for ranks, sps, su, eff in ((1, 640.0, 1.0, 1.0), (4, 2133.0, 3.33, 0.83)):
        con.execute("INSERT INTO predictions (source, model_version, model_kind, model, platform, platform_params, "
                    "rules, mode, scaling, ranks, batch_size, samples_per_rank, global_batch, step_s, compute_s, "
                    "exposed_s, comm_s, samples_per_s, speedup, efficiency, algorithms, provenance) VALUES "
                    "('model', 'dtnn-perfmodel/1', 'dtnn', 'resnet20_cifar10', 'ib100', '{}', 'ompi41', 'blocking', "
                    "'weak', ?, 64, 64, ?, 0.1, 0.09, 0.01, 0.01, ?, ?, ?, 'ring', '{}')",
                    (ranks, 64.0 * ranks, sps, su, eff))
    con.commit()
    con.close()
    rc, err, md = report(source, db, os.path.join(work, "out_pred"))
    check("predictions: report exit status", (rc, err), (0, ""))
    scaling = section(md, "## Scaling")
    check("predictions: said to have no measured runs", "1 predicted configuration(s) have no measured runs" in scaling,
          True)
    check("predictions: the 4-rank prediction's row", any(l.startswith("| - | resnet20_cifar10 |") and
                                                           "| 4 | 2,133.0 | 3.33 | 0.83 |" in l
                                                           for l in scaling.splitlines()), True)


def hostile_names_and_degenerate_rows(dtnn, source, work):
    print("\n== 5-8: a model name with '../', '$' in labels, zero-step communication rows, diverged runs ==")
    db = os.path.join(work, "hostile.db")
    con = adb.new_db(dtnn, db, work)
    a = adb.add_run(con, {"model": "simplemlp", "ranks": 1, "lr": "0.1"})
    b = adb.add_run(con, {"model": "simplemlp", "ranks": 1, "lr": "0.01"})
    con.execute("UPDATE runs SET label = 'dataset_train_path=$HOME/x_$;lr=0.1', samples_per_s = 100 WHERE id = ?", (a,))
    con.execute("UPDATE runs SET label = 'lr=$0.01$', samples_per_s = 120 WHERE id = ?", (b,))
    for run_id in (a, b):
        con.execute("INSERT INTO epochs (run_id, epoch, samples, time_s, samples_per_s, train_accuracy, metrics) "
                    "VALUES (?, 1, 100, 1.0, 100.0, 50.0, '{}')", (run_id,))
    # Scaling groups whose communication rows count no steps (v_comm's step_ms is NULL) or no time.
    for batch, steps, step_s in ((64, 0, 1.0), (32, 10, 0.0)):
        for ranks in (1, 2):
            r = adb.add_run(con, {"model": "simplecnn", "ranks": ranks, "batch_size": batch})
            con.execute("UPDATE runs SET samples_per_s = ? WHERE id = ?", (100.0 * ranks, r))
            adb.add_comm(con, r, 1, "median", steps, step_s, 0.0, 0.0)
    adb.add_run(con, {"model": "simplemlp", "ranks": 1, "lr": "9"}, status="diverged")
    con.commit()
    con.close()
    layers = os.path.join(work, "layers.json")
    adb.run([dtnn, "layers", "--model", "simplecnn", "--batch_size", "2", "--samples", "1", "--conv_algo",
             "im2row_gemm", "--json", layers])
    doc = json.load(open(layers))
    doc["model"] = "../../escaped"
    with open(layers, "w") as f:
        json.dump(doc, f)
    adb.run([dtnn, "ingest", layers, "--db", db])
    out = os.path.join(work, "deep", "a", "out")
    os.makedirs(os.path.join(work, "deep", "a", "out", "conv_"), exist_ok=True)  # where '../' would lead
    before = set(os.listdir(os.path.join(work, "deep")))
    rc, err, md = report(source, db, out)
    check("hostile: report exit status and no error", (rc, err), (0, ""))
    check("hostile: nothing written beside --out", set(os.listdir(os.path.join(work, "deep"))), before)
    check("hostile: nothing written into a directory under --out",
          os.listdir(os.path.join(out, "conv_")), [])
    check("hostile: the conv chart is in --out", any(n.startswith("conv_") and n.endswith(".png")
                                                     for n in os.listdir(out)), True)
    status = section(md, "## Run status")
    check("status: diverged counted", "| diverged | 1 |" in status, True)


def one_odd_row(dtnn, source, work):
    print("\n== one layer benchmark with a 5,000-character model name: the report is written around it ==")
    db = os.path.join(work, "odd.db")
    adb.new_db(dtnn, db, work).close()
    layers = os.path.join(work, "odd_layers.json")
    adb.run([dtnn, "layers", "--model", "simplecnn", "--batch_size", "2", "--samples", "1", "--conv_algo",
             "im2row_gemm", "--json", layers])
    doc = json.load(open(layers))
    doc["model"] = "m" * 5000
    with open(layers, "w") as f:
        json.dump(doc, f)
    adb.run([dtnn, "ingest", layers, "--db", db])
    out = os.path.join(work, "out_odd")
    rc, err, md = report(source, db, out)
    check("odd row: report exit status and no error", (rc, err), (0, ""))
    names = [n for n in os.listdir(out) if n.startswith("conv_")]
    check("odd row: the conv chart is drawn under a short file name",
          len(names) == 1 and names[0].endswith(".png") and len(names[0]) < 100, True)
    check("odd row: its section is in the report", "## Convolution algorithms per layer" in md, True)


def allreduce_fit(source, work):
    print("\n== 9: allreduce_fit.py, Iallreduce without the 4 B size ==")
    bench = []
    for name, sizes in (("BM_Allreduce", (4, 65536, 1 << 20, 64 << 20)), ("BM_Iallreduce", (65536, 1 << 20, 64 << 20))):
        for size in sizes:
            bench.append({"run_name": f"{name}/{size}/real_time", "run_type": "iteration",
                          "real_time": 10.0 + size * 1e-3, "time_unit": "us"})
    path = os.path.join(work, "ar.json")
    with open(path, "w") as f:
        json.dump({"benchmarks": bench}, f)
    p = subprocess.run(["/usr/bin/python3", os.path.join(source, "analysis", "allreduce_fit.py"), path],
                       capture_output=True, text=True)
    check("allreduce_fit: exit status and no traceback", (p.returncode, p.stderr), (0, ""))
    lines = {l.split(",")[0]: l for l in p.stdout.splitlines() if l.startswith("- ")}
    check("allreduce_fit: Allreduce's latency at 4 B", "4 B latency 10.00 us" in lines.get("- allreduce", ""), True)
    check("allreduce_fit: Iallreduce's latency at its own smallest size",
          "65536 B latency 75.54 us" in lines.get("- iallreduce", ""), True)


def gpu_profile_categories(source):
    print("\n== 10: gpu_profile_summary.py categories ==")
    sys.path.insert(0, os.path.join(source, "experiments"))
    import gpu_profile_summary as g  # noqa: E402
    for kernel, want in (("convertTensor_kernel", "copies / transposes / reductions"),
                         ("ampere_scudnn_128x64_relu_interior_nn_v1", "convolution"),
                         ("implicit_convolve_sgemm", "convolution"),
                         ("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x16", "GEMM (cuBLAS: 1x1 convolutions, FC)")):
        check(f"category of {kernel}", g.category(kernel), want)


def scaling_without_one_rank(dtnn, source, work):
    print("\n== 11: scaling against the fewest ranks (ranks_per_node = 2 over 1, 2, 4 nodes) ==")
    db = os.path.join(work, "nodes.db")
    con = adb.new_db(dtnn, db, work)
    for nodes, sps in ((1, 1000.0), (2, 1800.0), (4, 3200.0), (4, None)):
        run = adb.add_run(con, {"model": "simplemlp", "ranks": 2 * nodes, "nodes": nodes, "ranks_per_node": 2})
        con.execute("UPDATE runs SET samples_per_s = ? WHERE id = ?", (sps, run))
    con.commit()
    # speed-up 1.8 and 3.2 against 2 ranks; efficiency = speed-up x 2 / ranks: 0.9 and 0.8.
    want = [("2", "1", "1,000.0", "2", "1.00", "1.00"), ("4", "1", "1,800.0", "2", "1.80", "0.90"),
            ("8", "1", "3,200.0", "2", "3.20", "0.80")]
    view = con.execute("SELECT ranks, runs, speedup, efficiency, baseline_ranks FROM v_scaling ORDER BY ranks").fetchall()
    check("v_scaling: rows against 2 ranks", view, [(2, 1, 1.0, 1.0, 2), (4, 1, 1.8, 0.9, 2), (8, 1, 3.2, 0.8, 2)])
    con.close()
    for extra in ([], ["--matrix", "m"]):
        out = os.path.join(work, "out_nodes" + "_".join(extra))
        p = subprocess.run(["/usr/bin/python3", os.path.join(source, "analysis", "plots", "report.py"), "--db", db,
                            "--out", out, *extra], capture_output=True, text=True)
        check(f"nodes {extra}: report exit status", (p.returncode, p.stderr), (0, ""))
        scaling = section(open(os.path.join(out, "report.md")).read(), "## Scaling")
        rows = [tuple(c.strip() for c in l.split("|")[1:-1]) for l in scaling.splitlines() if "| measured |" in l]
        check(f"nodes {extra}: ranks, runs, samples/s, against, speed-up, efficiency",
              [(r[-11], r[-10], r[-9], r[-5], r[-4], r[-3]) for r in rows], want)  # min, max, sd between


def image_lines(source):
    print("\n== 12: Markdown image lines ==")
    sys.path.insert(0, os.path.join(source, "analysis", "plots"))
    from report_format import markdown_image  # noqa: E402
    check("alt text with brackets and a backslash", markdown_image("h.png", "history of lr=[0.1] a\\b"),
          "![history of lr=\\[0.1\\] a\\\\b](h.png)")
    check("a file name with a space", markdown_image("conv a (1).png", "x"), "![x](<conv a (1).png>)")


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: test_report_edges.py DTNN SOURCE_DIR WORK")
    dtnn, source, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    layer_pooling_and_accuracy_rows(dtnn, source, work)
    chart_targets(source)
    orphan_predictions(dtnn, source, work)
    hostile_names_and_degenerate_rows(dtnn, source, work)
    one_odd_row(dtnn, source, work)
    allreduce_fit(source, work)
    gpu_profile_categories(source)
    scaling_without_one_rank(dtnn, source, work)
    image_lines(source)
    print(f"\n{adb.CHECKS - len(adb.FAILURES)} of {adb.CHECKS} checks passed")
    if adb.FAILURES:
        print("FAILED:\n  " + "\n  ".join(adb.FAILURES))
        sys.exit(1)


if __name__ == "__main__":
    main()
