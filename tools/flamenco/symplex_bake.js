// SPDX-License-Identifier: GPL-3.0-or-later
//
// Symplex Bake: a Flamenco 3 job type. One task opens the submitted blend file in Blender on a Worker, bakes
// every Symplex setup and vehicle rig in it with the Symplex extension installed in that Blender, and saves a
// baked copy into the output folder (written under a temporary name and renamed, so the copy appears only
// complete). The task fails (Blender exits non-zero) when the bake fails, when the file has nothing to bake or
// when Symplex is not enabled. Install: copy this file into the `scripts` folder beside the flamenco-manager
// executable and restart the Manager (docs/farm.md).

const JOB_TYPE = {
    label: "Symplex Bake",
    description: "Bake the Symplex setups and vehicle rigs of the blend file and save a baked copy",
    settings: [
        { key: "output_dir", type: "string", subtype: "dir_path", required: true, visible: "submission",
          description: "Folder the baked copy is saved to; every Worker must be able to write it" },
        { key: "output_name", type: "string", required: true, visible: "submission",
          eval: "Path(bpy.data.filepath).stem + '_baked.blend'",
          description: "File name of the baked copy" },
        // Set by the Flamenco add-on on submission: the (packed) blend file the Workers open.
        { key: "blendfile", type: "string", required: true, visible: "web",
          description: "Path of the blend file to bake" },
    ],
};

function compileJob(job) {
    const settings = job.settings;
    const output = path.join(settings.output_dir, settings.output_name);
    const task = author.Task(`symplex-bake ${path.basename(settings.blendfile)}`, "blender");
    task.addCommand(author.Command("blender-render", {
        exe: "{blender}",
        exeArgs: "{blenderArgs}",
        argsBefore: [],
        blendfile: settings.blendfile,
        args: ["--python-exit-code", "1", "--python-expr", bakeExpression(output)],
    }));
    job.addTask(task);
}

// The Python run after the file is open: find the enabled Symplex add-on (an extension is bl_ext.<repo>.symplex)
// and call its stable farm entry point, addon/bridge/headless.py: bake_open_file(out) -> exit code.
function bakeExpression(output) {
    return [
        "import importlib, sys, bpy",
        "names = [n for n in bpy.context.preferences.addons.keys() if n.rpartition('.')[2] == 'symplex']",
        "sys.exit(importlib.import_module(names[0] + '.addon.bridge.headless').bake_open_file("
            + JSON.stringify(output) + ") if names else "
            + "'Symplex is not enabled in this Blender: install the extension (docs/farm.md)')",
    ].join("\n");
}
