// The page's icons: inline SVG strokes (no icon font, nothing to download).

const svg = (path) =>
  function Icon() {
    return (
      <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
        <path
          d={path}
          fill="none"
          stroke="currentColor"
          strokeWidth="2"
          strokeLinecap="round"
          strokeLinejoin="round"
        />
      </svg>
    );
  };
export const MenuIcon = svg("M4 6h16M4 12h16M4 18h16");
export const TrashIcon = svg("M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13");
export const ClipIcon = svg(
  "M21 11.5l-8.5 8.5a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8.5-8.5",
);
export const StopIcon = svg("M7 7h10v10H7z");
export const RetryIcon = svg("M4 12a8 8 0 1 0 2.3-5.6M4 4v4h4");
export const FileIcon = svg("M6 3h8l4 4v14H6zM14 3v4h4");
