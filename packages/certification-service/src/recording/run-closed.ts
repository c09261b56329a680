/** Thrown when a run's request arrives after the run ended: the stage answers it 404. */
export class RunClosedError extends Error {
  constructor() {
    super('the run has ended');
    this.name = 'RunClosedError';
  }
}
