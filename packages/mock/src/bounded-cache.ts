/** A map that keeps at most `capacity` entries, dropping the oldest inserted first. */
export class BoundedCache<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #capacity: number;
  // The last key found: a fresh copy of a long string key (a token from a new request) compares
  // faster than the Map can hash it, and clients mostly send the same token again and again.
  #lastKey: K | undefined;
  #lastValue: V | undefined;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get(key: K): V | undefined {
    if (key === this.#lastKey && this.#lastValue !== undefined) return this.#lastValue;
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#lastKey = key;
      this.#lastValue = value;
    }
    return value;
  }

  set(key: K, value: V): void {
    this.#lastKey = undefined;
    this.#lastValue = undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    while (this.#entries.size > this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }

  get size(): number {
    return this.#entries.size;
  }
}
