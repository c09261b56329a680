import type { Database } from '../db/database.js';
import type { LogLine } from '../observability/logger.js';
import { readJournalFile } from './journal-file.js';
import { dataError, described, isExchange, notStored, type StoreItem, storeEntries } from './store.js';

/**
 * Fills the database from the journal files a previous process left (killed before it committed what
 * it had answered): run before this process serves a call. Resolves with the calls recovered.
 */
export async function replayJournal(db: Database, dir: string, log: LogLine = () => {}): Promise<number> {
  const { entries, remove } = readJournalFile(dir);
  let recovered = 0;
  const leftOut = (item: StoreItem, why: string) =>
    log(
      `run ${item.runId}: ${described(item)} from the journal file cannot be stored and is left out: ${why}`,
    );
  /** Stores `items`; counts the calls a run took, says what none did (its run is not in the database). */
  const store = async (items: StoreItem[]) => {
    const took = await storeEntries(db, items, false);
    for (const item of items)
      if (!took.has(item.runId)) leftOut(item, 'its run is not in the database');
      else if (isExchange(item)) recovered += 1;
  };
  for (let index = 0; index < entries.length; index += 64) {
    const fresh = await notStored(db, entries.slice(index, index + 64));
    if (fresh.length === 0) continue;
    try {
      await store(fresh);
    } catch (error) {
      if (!dataError(error)) throw error;
      // One entry's data: each goes alone, and what cannot be stored is left out, said, rather than
      // keeping the service from starting.
      for (const item of fresh)
        try {
          await store([item]);
        } catch (alone) {
          if (!dataError(alone)) throw alone;
          leftOut(item, (alone as Error).message);
        }
    }
  }
  remove();
  if (recovered > 0) log(`recovered ${recovered} answered call(s) from the journal file in ${dir}`);
  return recovered;
}
