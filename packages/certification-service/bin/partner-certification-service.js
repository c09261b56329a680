#!/usr/bin/env node
// Committed launcher so that package managers can link the bin before the package is built.
import '../dist/cli.js';
