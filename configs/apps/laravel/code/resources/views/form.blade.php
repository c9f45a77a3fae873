<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>loadcmp laravel: form</title></head>
<body>
<h1>loadcmp laravel: form</h1>
<p>{{ $notes }} notes in this session.</p>
<form method="post" action="/form">
<input type="hidden" name="_token" value="{{ csrf_token() }}">
<input name="note"><button>Keep</button>
</form>
</body>
</html>
