"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.startSpinner = startSpinner;
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Progress on stderr, only for a person watching: a TTY, and not under CI. */
function startSpinner(label, stream = process.stderr) {
    if (!stream.isTTY || process.env.CI)
        return () => undefined;
    const started = Date.now();
    let frame = 0;
    const draw = () => {
        const seconds = Math.floor((Date.now() - started) / 1000);
        stream.write(`\r${FRAMES[frame++ % FRAMES.length]} ${label} ${seconds}s`);
    };
    draw();
    const timer = setInterval(draw, 100);
    timer.unref();
    return () => {
        clearInterval(timer);
        stream.write('\r\x1b[2K');
    };
}
