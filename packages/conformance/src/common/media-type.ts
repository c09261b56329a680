/** The media type of a Content-Type value, lower-cased, without parameters ('' when absent). */
export function mediaTypeOfValue(value: string | undefined): string {
  return (value ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The media type of a Content-Type header, lower-cased, without parameters. */
export function mediaTypeOf(headers: Headers): string | undefined {
  const value = headers.get('content-type');
  return value === null ? undefined : mediaTypeOfValue(value);
}
