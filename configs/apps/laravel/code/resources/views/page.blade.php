<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>loadcmp laravel: {{ $title }}</title></head>
<body>
<h1>loadcmp laravel: {{ $title }}</h1>
<p>Laravel {{ app()->version() }} on PHP {{ PHP_VERSION }} ({{ PHP_SAPI }}); slept {{ $ms }} ms.</p>
</body>
</html>
