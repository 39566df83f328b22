#!/usr/bin/env node
require('../dist/cli/main.js').main(process.argv.slice(2))
