/**
 * Statements of the embedded store taken in turns with the rest of the thread. PGlite runs each
 * statement on the thread that serves HTTP, and hands the next waiting statement its turn in the same
 * task: a queue of statements (one partner's creations and finishes, the journal's fill) then holds the
 * thread until it is empty, and another partner's call that needs no statement at all (a token
 * request) waits behind it all. Here a statement that finds another running waits for it and then for
 * one turn of the event loop (`setImmediate`: after the poll phase), so that calls arrived meanwhile
 * are read and served between two statements. Statements still run one at a time and in the order
 * asked; a statement asked while none runs starts at once.
 */
export function statementTurns(): <T>(work: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  let pending = 0;
  return <T>(work: () => Promise<T>): Promise<T> => {
    const started = pending === 0 ? work() : tail.then(nextTurn).then(work);
    pending += 1;
    const done = started.finally(() => {
      pending -= 1;
    });
    tail = done.catch(() => undefined);
    return done;
  };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
