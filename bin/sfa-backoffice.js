#!/usr/bin/env node
// The built command line (npm install runs the build through the prepare script).
import '../dist/cli.js';
