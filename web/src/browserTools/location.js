// The `get_location` browser tool: the browser's geolocation. onToolCall fires only once the
// user approved (the server holds the call back until then).
export function getLocation(_input, answer, fail) {
  navigator.geolocation.getCurrentPosition(
    ({ coords }) => answer({ latitude: coords.latitude, longitude: coords.longitude }),
    (error) => fail(`The browser gave no location: ${error.message}`),
  );
}
