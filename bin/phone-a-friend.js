#!/usr/bin/env node
require('../cli/main.js').main(process.argv.slice(2))
