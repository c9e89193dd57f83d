/**
 * Small durable-write helpers for the JSONL store: write + fsync, atomic replace, directory fsync.
 * A write is durable only once its file (and, for a create, rename or unlink, its directory) is synced.
 */
import type { FileHandle } from "node:fs/promises";
import { open, readFile, rename } from "node:fs/promises";

/** Reads a file, or undefined when it does not exist. */
export async function readIfExists(file: string): Promise<Buffer | undefined> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Reads a whole file, handing `buf[0, filled)` to `onChunk` as each chunk arrives while the next one is
 * being read, so work on the bytes overlaps the disk. Undefined when the file does not exist.
 */
export async function readChunked(
  file: string,
  onChunk: (buf: Buffer, filled: number) => void,
): Promise<Buffer | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const buf = Buffer.allocUnsafe((await handle.stat()).size);
    const readFrom = (offset: number) =>
      handle.read(buf, offset, Math.min(READ_CHUNK, buf.length - offset), offset);
    let filled = 0;
    let reading = readFrom(0);
    for (;;) {
      const { bytesRead } = await reading;
      filled += bytesRead;
      if (bytesRead === 0 || filled === buf.length) return buf.subarray(0, filled);
      reading = readFrom(filled);
      try {
        onChunk(buf, filled);
      } catch (error) {
        await reading.catch(() => undefined); // not left in flight, nor its failure unhandled
        throw error;
      }
    }
  } finally {
    await handle.close();
  }
}

const READ_CHUNK = 1024 * 1024;

/** Writes all of `data` at the handle's position (a short write is legal for `write(2)`). */
export async function writeFully(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    offset += bytesWritten;
  }
}

/** Appends and fsyncs. The caller counts the fsync. */
export async function appendDurable(file: string, data: Buffer): Promise<void> {
  const handle = await open(file, "a");
  try {
    await writeFully(handle, data);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Old content or new, never a mix: write a temp file, fsync it, rename over, fsync the directory. */
export async function replaceDurable(file: string, dir: string, data: Buffer): Promise<void> {
  const tmp = `${file}.tmp`;
  const handle = await open(tmp, "w");
  try {
    await writeFully(handle, data);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
  await fsyncDir(dir);
}

/** Makes a rename, create or unlink in `dir` durable. Some platforms cannot fsync a directory. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM") throw error;
  } finally {
    await handle.close();
  }
}
