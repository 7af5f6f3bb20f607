// A minimal WASI preview 1 for a page: arguments, no environment, no files; standard output and
// error kept in buffers; clocks from performance.now(); random numbers from crypto. What a program
// of the test corpus that reads no file needs, and nothing more: every other call says ENOSYS.
//
// fd_write writes one buffer a call, the first non-empty one, as Wasmtime's WASI does, so that
// the program's libc takes the same paths as under `pathprof run`.

const ESUCCESS = 0;
const EBADF = 8;
const ENOSYS = 52;
const ESPIPE = 70;

/** Every function of WASI preview 1. */
const PREVIEW1 = `args_get args_sizes_get environ_get environ_sizes_get clock_res_get clock_time_get fd_advise
  fd_allocate fd_close fd_datasync fd_fdstat_get fd_fdstat_set_flags fd_fdstat_set_rights fd_filestat_get
  fd_filestat_set_size fd_filestat_set_times fd_pread fd_prestat_get fd_prestat_dir_name fd_pwrite fd_read
  fd_readdir fd_renumber fd_seek fd_sync fd_tell fd_write path_create_directory path_filestat_get
  path_filestat_set_times path_link path_open path_readlink path_remove_directory path_rename path_symlink
  path_unlink_file poll_oneoff proc_exit proc_raise sched_yield random_get sock_accept sock_recv sock_send
  sock_shutdown`.split(/\s+/);

/** Thrown by proc_exit: the program's exit status. */
export class Exit {
  constructor(code) {
    this.code = code;
  }
}

export class Wasi {
  constructor(args) {
    this.args = args;
    this.stdout = [];
    this.stderr = [];
    this.memory = null;
  }

  /** The program's instance: its memory is where arguments and buffers lie. */
  start(instance) {
    this.memory = instance.exports.memory;
    try {
      instance.exports._start();
      return 0;
    } catch (e) {
      if (e instanceof Exit) return e.code;
      throw e;
    }
  }

  get imports() {
    const view = () => new DataView(this.memory.buffer);
    const bytes = () => new Uint8Array(this.memory.buffer);
    const encoded = this.args.map((a) => new TextEncoder().encode(`${a}\0`));
    const stdio = (fd) => (fd === 1 ? this.stdout : fd === 2 ? this.stderr : null);
    const imports = {
      args_sizes_get: (count, size) => {
        view().setUint32(count, encoded.length, true);
        view().setUint32(size, encoded.reduce((n, a) => n + a.length, 0), true);
        return ESUCCESS;
      },
      args_get: (argv, buf) => {
        for (const a of encoded) {
          view().setUint32(argv, buf, true);
          bytes().set(a, buf);
          argv += 4;
          buf += a.length;
        }
        return ESUCCESS;
      },
      environ_sizes_get: (count, size) => {
        view().setUint32(count, 0, true);
        view().setUint32(size, 0, true);
        return ESUCCESS;
      },
      environ_get: () => ESUCCESS,
      fd_write: (fd, iovs, count, written) => {
        const out = stdio(fd);
        if (!out) return EBADF;
        let n = 0;
        for (let i = 0; i < count; i++) {
          const ptr = view().getUint32(iovs + 8 * i, true);
          const len = view().getUint32(iovs + 8 * i + 4, true);
          if (len === 0) continue;
          out.push(bytes().slice(ptr, ptr + len));
          n = len;
          break;
        }
        view().setUint32(written, n, true);
        return ESUCCESS;
      },
      fd_fdstat_get: (fd, stat) => {
        if (fd > 2) return EBADF;
        // Not a terminal (type unknown, as Wasmtime says of a pipe), no flags, every right.
        view().setUint8(stat, 0);
        view().setUint16(stat + 2, 0, true);
        view().setBigUint64(stat + 8, 0xffffffffffffffffn, true);
        view().setBigUint64(stat + 16, 0xffffffffffffffffn, true);
        return ESUCCESS;
      },
      fd_seek: (fd) => (fd > 2 ? EBADF : ESPIPE),
      fd_close: (fd) => (fd > 2 ? EBADF : ESUCCESS),
      fd_prestat_get: () => EBADF,
      fd_prestat_dir_name: () => EBADF,
      proc_exit: (code) => {
        throw new Exit(code);
      },
      clock_time_get: (_id, _precision, time) => {
        view().setBigUint64(time, BigInt(Math.round(performance.now() * 1e6)), true);
        return ESUCCESS;
      },
      random_get: (buf, len) => {
        for (let at = 0; at < len; at += 65536) crypto.getRandomValues(bytes().subarray(buf + at, buf + Math.min(len, at + 65536)));
        return ESUCCESS;
      },
    };
    for (const name of PREVIEW1) imports[name] ??= () => ENOSYS;
    return imports;
  }

  /** What the program wrote to `fd` (1 or 2), as bytes. */
  written(fd) {
    const parts = fd === 1 ? this.stdout : this.stderr;
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}
