// The stack's processes, for the black-box suites (tests/fault,
// tests/multihost): a process's pid as deploy/local/lib.sh records it, and
// whether it is still running (a zombie is not).
import { readFileSync } from 'node:fs';

// The pid in RUNDIR/NAME.pid, or 0 when there is none.
export function pidIn(runDir, name) {
  try { return Number(readFileSync(`${runDir}/${name}.pid`, 'utf8').trim()); } catch { return 0; }
}

export function alive(pid) {
  if (!pid) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch { return false; }
}
