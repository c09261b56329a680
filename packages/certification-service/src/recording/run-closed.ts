import { ServiceError } from '../errors.js';

/** Thrown when a run's request arrives after the run ended: the stage answers it 404. */
export class RunClosedError extends ServiceError {
  constructor() {
    super('ERR_RUN_CLOSED', 'the run has ended');
    this.name = 'RunClosedError';
  }
}
