// Evaluates a Flamenco 3 job type script under node with a minimal stand-in for what the Manager provides
// (author.Task/author.Command, path, print, job.addTask) and prints the authored tasks as JSON.
//     node flamenco_author.js JOB_TYPE.js SETTINGS.json
"use strict";
const fs = require("fs");
const nodePath = require("path");
const vm = require("vm");

const [script, settingsFile] = process.argv.slice(2);
const tasks = [];
const author = {
    Task: (name, type) => ({ name, type, commands: [], addCommand(c) { this.commands.push(c); },
                             addDependency() {} }),
    Command: (name, parameters) => ({ name, parameters }),
};
const path = {
    join: nodePath.posix.join, basename: nodePath.posix.basename, dirname: nodePath.posix.dirname,
    stem: (p) => nodePath.posix.basename(p, nodePath.posix.extname(p)),
};
const context = { author, path, print: (...a) => console.error(...a), JSON };
vm.createContext(context);
vm.runInContext(fs.readFileSync(script, "utf8") + "\n;this.JOB_TYPE = JOB_TYPE; this.compileJob = compileJob;", context);
const job = { settings: JSON.parse(fs.readFileSync(settingsFile, "utf8")), addTask: (t) => tasks.push(t) };
context.compileJob(job);
console.log(JSON.stringify({ job_type: context.JOB_TYPE, tasks: tasks.map(({ name, type, commands }) => ({ name, type, commands })) }));
